# The backend-independent part of W8A8 PTQ of the small digit-canvas RetinaNet: the
# float model and checkpoint, 8 calibration batches of 16 training canvases
# through the deterministic test pipeline, and a tracer that keeps the
# head's post-processing and losses out of the graph. A backend's config
# adds its qconfig `_base_` and sets `model.quantizer`.
_base_ = ['../../../../detection/retinanet_tiny_digits.py', '../../_base_/calib8.py']

float_checkpoint = 'work_dirs/det/retinanet_tiny_digits/epoch_24.pth'

calibrate_dataloader = dict(
    batch_size=16,
    num_workers=0,
    dataset=dict(_base_.train_dataloader.dataset,
                 pipeline=_base_.test_pipeline),
    sampler=dict(type='DefaultSampler', shuffle=True))

model = dict(
    _delete_=True,
    type='mmrazor_quant.MMArchitectureQuant',
    data_preprocessor=_base_.data_preprocessor,
    architecture=_base_.model,
    float_checkpoint=float_checkpoint,
    quantizer=dict(
        tracer=dict(
            type='mmrazor_quant.CustomTracer',
            skipped_methods=[
                'mmdet.models.dense_heads.base_dense_head.BaseDenseHead.'
                'predict_by_feat',
                'mmdet.models.dense_heads.anchor_head.AnchorHead.'
                'loss_by_feat',
            ])))

test_cfg = dict(
    _delete_=True,
    calibrate_dataloader=calibrate_dataloader,
    **_base_.ptq_loop)
