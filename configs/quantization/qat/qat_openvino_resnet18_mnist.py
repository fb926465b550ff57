# W8A8 quantization-aware training of the fp32 MNIST ResNet-18 for OpenVINO
# with straight-through fake quants: min/max weight ranges, moving-average
# activation ranges (all-reduced across ranks) during the first epoch, fixed
# ranges and frozen BN statistics in the second.
#   python tools/train.py configs/quantization/qat/qat_openvino_resnet18_mnist.py
_base_ = [
    '../../fp32/resnet18_mnist.py',
    '../_base_/qconfigs/openvino_w8a8.py'
]

# Written by `make demo` (tools/demo.py); after your own fp32 training pass
# --cfg-options model.float_checkpoint=work_dirs/resnet18_mnist/epoch_6.pth
float_checkpoint = 'work_dirs/fp32/resnet18_mnist/float.pth'

model = dict(
    _delete_=True,
    type='mmrazor_quant.MMArchitectureQuant',
    data_preprocessor=dict(
        type='mmcls.ClsDataPreprocessor', **_base_.data_preprocessor),
    architecture=_base_.model,
    float_checkpoint=float_checkpoint,
    quantizer=dict(
        _base_.quantizer,
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

# Fine-tuning from the float model: SGD with a cosine decay over the QAT
# epochs (stepped per iteration).
max_epochs = 2
optim_wrapper = dict(
    _delete_=True,
    optimizer=dict(type='SGD', lr=0.01, momentum=0.9, weight_decay=1e-4))
param_scheduler = [
    dict(
        type='CosineAnnealingLR',
        eta_min=0.0,
        by_epoch=True,
        begin=0,
        end=max_epochs,
        convert_to_iter_based=True)
]

train_cfg = dict(
    _delete_=True,
    type='mmrazor_quant.QATEpochBasedLoop',
    max_epochs=max_epochs,
    val_interval=1,
    disable_observer_begin=2,
    freeze_bn_begin=2)
val_cfg = dict(_delete_=True, type='mmrazor_quant.QATValLoop')

# BN buffers averaged across ranks before each checkpoint (DDP runs with
# broadcast_buffers=False).
default_hooks = dict(sync=dict(type='SyncBuffersHook'))
