# W8A8 LSQ quantization-aware training of the fp32 MNIST ResNet-18 for
# OpenVINO. The first batch sets every scale to LSQ's static estimate
# (2 * mean|x| / sqrt(quant_max), all-reduced across ranks), then scales and
# weights are learned together; BN statistics stay those of the float model.
#   python tools/train.py configs/quantization/qat/lsq/lsq_openvino_resnet18_mnist.py
_base_ = [
    '../../../fp32/resnet18_mnist.py',
    '../../_base_/qconfigs/openvino_w8a8_lsq.py'
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
# epochs (stepped per iteration); no weight decay on the learned scales.
max_epochs = 1
optim_wrapper = dict(
    _delete_=True,
    # lr 1e-2 drove small per-channel weight scales (~5e-6) negative within
    # 5 steps and the loss to NaN; 1e-3 keeps every scale positive.
    optimizer=dict(type='SGD', lr=1e-4, momentum=0.9, weight_decay=1e-4),
    paramwise_cfg=dict(custom_keys={'.scale': dict(decay_mult=0.0)}))
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
    type='mmrazor_quant.LSQEpochBasedLoop',
    max_epochs=max_epochs,
    val_interval=1,
    freeze_bn_begin=1)
val_cfg = dict(_delete_=True, type='mmrazor_quant.QATValLoop')

# BN buffers averaged across ranks before each checkpoint (DDP runs with
# broadcast_buffers=False).
default_hooks = dict(sync=dict(type='SyncBuffersHook'))
