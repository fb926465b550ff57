# The scheme-independent part of 10-epoch QAT of mmcls's ImageNet ResNet-18
# (MMRazor's setting): the quantizable model
# (../../_base_/models/resnet18_in1k.py), the DDP wrapper, a small constant
# learning rate, the QAT validation loop and the BN buffer sync. A config
# sets `model.quantizer` (its scheme) and `train_cfg` (its loop).
_base_ = ['../../_base_/models/resnet18_in1k.py', '../../_base_/ddp.py']

max_epochs = 10
optim_wrapper = dict(
    optimizer=dict(type='SGD', lr=1e-4, momentum=0.9, weight_decay=1e-4))
param_scheduler = [
    dict(
        type='ConstantLR',
        factor=1.0,
        by_epoch=True,
        begin=0,
        end=max_epochs)
]

val_cfg = dict(_delete_=True, type='mmrazor_quant.QATValLoop')

# BN running statistics (buffers, not synchronised by DDP with
# broadcast_buffers=False) averaged across ranks after every epoch, before
# the checkpoint is written.
default_hooks = dict(sync=dict(type='SyncBuffersHook'))
