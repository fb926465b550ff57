# The scheme-independent part of QAT of the fp32 MNIST ResNet-18: the
# quantizable model (../../_base_/models/resnet18_mnist.py), the DDP wrapper,
# SGD and a cosine schedule, the QAT validation loop and the BN buffer sync. A
# config adds a qconfig `_base_`, sets `model.quantizer`, its learning rate and
# training loop, and moves the cosine's end to its max_epochs.
_base_ = ['../../_base_/models/resnet18_mnist.py', '../../_base_/ddp.py']

# SGD with momentum (a config sets its learning rate) and QAT's schedule:
# cosine to zero from the first step (the weights start trained, no
# warm-up); a config moves `end` to its max_epochs.
optim_wrapper = dict(
    _delete_=True,
    optimizer=dict(type='SGD', lr=0.01, momentum=0.9, weight_decay=1e-4))
param_scheduler = [
    dict(
        type='CosineAnnealingLR',
        eta_min=0.0,
        by_epoch=True,
        begin=0,
        end=_base_.max_epochs,
        convert_to_iter_based=True)
]

val_cfg = dict(_delete_=True, type='mmrazor_quant.QATValLoop')

default_hooks = dict(sync=dict(type='SyncBuffersHook'))
