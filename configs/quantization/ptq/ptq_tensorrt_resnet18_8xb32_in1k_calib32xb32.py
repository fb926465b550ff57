# W8A8 post-training quantization of mmcls's ImageNet ResNet-18 for
# TensorRT (../../_base_/qconfigs/tensorrt_w8a8.py), as MMRazor's ptq_tensorrt_resnet18_8xb32_in1k_calib32xb32.
#   python tools/ptq.py configs/quantization/ptq/ptq_tensorrt_resnet18_8xb32_in1k_calib32xb32.py
# It needs ImageNet in data/imagenet (mmcls's layout).
_base_ = [
    'mmcls::resnet/resnet18_8xb32_in1k.py',
    '../deploy_cfgs/mmcls/classification_tensorrt-int8-explicit_dynamic-224x224.py',  # noqa: E501
    '../_base_/qconfigs/tensorrt_w8a8.py', './_base_/calib32_ddp.py'
]

float_checkpoint = 'https://download.openmmlab.com/mmclassification/v0/resnet/resnet18_8xb32_in1k_20210831-fbbb1da6.pth'  # noqa: E501

# Calibrate on training images (MMRazor used the validation set; we never
# do), seen through the deterministic test pipeline (resize + centre crop).
calibrate_dataloader = dict(
    batch_size=32,
    num_workers=5,
    dataset=dict(_base_.train_dataloader.dataset,
                 pipeline=_base_.test_pipeline),
    sampler=dict(type='DefaultSampler', shuffle=True))

model = dict(
    _delete_=True,
    type='mmrazor_quant.MMArchitectureQuant',
    data_preprocessor=dict(
        type='mmcls.ClsDataPreprocessor', **_base_.data_preprocessor),
    architecture=_base_.model,
    deploy_cfg=_base_.deploy_cfg,
    float_checkpoint=float_checkpoint,
    quantizer=dict(
        _base_.quantizer,
        tracer=dict(
            type='mmrazor_quant.CustomTracer',
            skipped_methods=[
                'mmcls.models.heads.ClsHead._get_loss',
                'mmcls.models.heads.ClsHead._get_predictions'
            ])))

test_cfg = dict(
    _delete_=True,
    calibrate_dataloader=calibrate_dataloader,
    **_base_.ptq_loop)
