# The scheme-independent part of QAT of the fp32 MNIST ResNet-18: the
# quantizable model (../../_base_/models/resnet18_mnist.py), the DDP
# wrapper, the QAT validation loop and the BN buffer sync. A config adds a
# qconfig `_base_`, sets `model.quantizer` and writes its schedule and
# training loop.
_base_ = ['../../_base_/models/resnet18_mnist.py', '../../_base_/ddp.py']

val_cfg = dict(_delete_=True, type='mmrazor_quant.QATValLoop')

default_hooks = dict(sync=dict(type='SyncBuffersHook'))
