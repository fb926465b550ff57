# W8A8 LSQ (learned step size) quantization-aware training of mmcls's
# ImageNet ResNet-18 for OpenVINO, 10 epochs from the float checkpoint
# (MMRazor's lsq_openvino_resnet18_8xb32_10e_in1k: 69.42 top-1). The first
# batch initialises every scale (all-reduced across ranks), then the scales
# are learned with the weights.
#   bash tools/dist_train.sh configs/quantization/qat/lsq/lsq_openvino_resnet18_8xb32_10e_in1k.py 8
_base_ = [
    'mmcls::resnet/resnet18_8xb32_in1k.py',
    '../../_base_/qconfigs/openvino_w8a8_lsq.py'
]

float_checkpoint = 'https://download.openmmlab.com/mmclassification/v0/resnet/resnet18_8xb32_in1k_20210831-fbbb1da6.pth'  # noqa: E501

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

# BN statistics frozen from the first epoch: the folded weights the scales
# are learned for stay those of the float model's statistics.
train_cfg = dict(
    _delete_=True,
    type='mmrazor_quant.LSQEpochBasedLoop',
    max_epochs=max_epochs,
    val_interval=1,
    freeze_bn_begin=1)
val_cfg = dict(_delete_=True, type='mmrazor_quant.QATValLoop')

default_hooks = dict(sync=dict(type='SyncBuffersHook'))
