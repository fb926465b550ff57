# The backend-independent part of W8A8 PTQ of mmdet's YOLOX-s (COCO): the
# float model and checkpoint, calibration on 32 batches of training images
# (the COCO set inside the mosaic/mixup wrapper) through the deterministic
# test pipeline, and a tracer that keeps YOLOXHead's post-processing and
# losses out of the graph. A backend's config adds its deploy config and
# qconfig `_base_` and sets `model.deploy_cfg` and `model.quantizer`.
_base_ = [
    'mmdet::yolox/yolox_s_8xb8-300e_coco.py',
    '../../_base_/calib32_ddp.py'
]

float_checkpoint = 'https://download.openmmlab.com/mmdetection/v2.0/yolox/yolox_s_8x8_300e_coco/yolox_s_8x8_300e_coco_20211121_095711-4592a793.pth'  # noqa: E501

# Calibrate on training images (the COCO set inside the mosaic/mixup
# wrapper) through the deterministic test pipeline.
calibrate_dataloader = dict(
    batch_size=32,
    num_workers=5,
    dataset=dict(_base_.train_dataset.dataset,
                 pipeline=_base_.test_pipeline),
    sampler=dict(type='DefaultSampler', shuffle=True))

model = dict(
    _delete_=True,
    type='mmrazor_quant.MMArchitectureQuant',
    # YOLOX's preprocessor without its random multi-scale batch resizing:
    # calibration and evaluation see fixed sizes.
    data_preprocessor=dict(
        type='mmdet.DetDataPreprocessor', pad_size_divisor=32),
    architecture=_base_.model,
    float_checkpoint=float_checkpoint,
    quantizer=dict(
        tracer=dict(
            type='mmrazor_quant.CustomTracer',
            skipped_methods=[
                'mmdet.models.dense_heads.yolox_head.YOLOXHead.'
                'predict_by_feat',
                'mmdet.models.dense_heads.yolox_head.YOLOXHead.'
                'loss_by_feat',
            ])))

# YOLOX's training hooks (mode switch, EMA, norm sync) belong to training.
custom_hooks = []

test_cfg = dict(
    _delete_=True,
    calibrate_dataloader=calibrate_dataloader,
    **_base_.ptq_loop)
