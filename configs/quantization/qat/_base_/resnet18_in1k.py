# The scheme-independent part of 10-epoch QAT of mmcls's ImageNet ResNet-18
# (MMRazor's setting): the float model and checkpoint, a tracer that keeps
# ClsHead's loss and predictions out of the graph, the DDP wrapper, a small
# constant learning rate, the QAT validation loop and the BN buffer sync. A
# config sets `model.quantizer` (its scheme) and `train_cfg` (its loop).
_base_ = ['mmcls::resnet/resnet18_8xb32_in1k.py']

float_checkpoint = 'https://download.openmmlab.com/mmclassification/v0/resnet/resnet18_8xb32_in1k_20210831-fbbb1da6.pth'  # noqa: E501

model = dict(
    _delete_=True,
    type='mmrazor_quant.MMArchitectureQuant',
    data_preprocessor=dict(
        type='mmcls.ClsDataPreprocessor', **_base_.data_preprocessor),
    architecture=_base_.model,
    float_checkpoint=float_checkpoint,
    quantizer=dict(
        tracer=dict(
            type='mmrazor_quant.CustomTracer',
            skipped_methods=[
                'mmcls.models.heads.ClsHead._get_loss',
                'mmcls.models.heads.ClsHead._get_predictions'
            ])))

model_wrapper_cfg = dict(
    type='mmrazor_quant.MMArchitectureQuantDDP',
    broadcast_buffers=False,
    find_unused_parameters=True)

# Fine-tuning: a small constant learning rate.
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
