# The backend-independent part of W8A8 PTQ of mmcls's ImageNet MobileNetV2
# (MMRazor's setting): the float model and checkpoint, calibration on 32
# batches of training images, and a tracer that keeps ClsHead's loss and
# predictions out of the graph. A backend's config adds its deploy config
# and qconfig `_base_` and sets `model.deploy_cfg` and `model.quantizer`.
_base_ = ['mmcls::mobilenet_v2/mobilenet-v2_8xb32_in1k.py', '../calib32_ddp.py']

float_checkpoint = 'https://download.openmmlab.com/mmclassification/v0/mobilenet_v2/mobilenet_v2_batch256_imagenet_20200708-3b2dc3af.pth'  # noqa: E501

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
    float_checkpoint=float_checkpoint,
    quantizer=dict(
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
