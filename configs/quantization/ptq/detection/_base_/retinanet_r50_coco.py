# The backend-independent part of W8A8 PTQ of mmdet's RetinaNet-R50-FPN
# (COCO): the float model and checkpoint, calibration on 32 batches of
# training images through the deterministic test pipeline, and a tracer that
# keeps the head's post-processing (predict_by_feat) and losses
# (loss_by_feat) out of the graph. A backend's config adds its deploy config
# and qconfig `_base_` and sets `model.deploy_cfg` and `model.quantizer`.
_base_ = [
    'mmdet::retinanet/retinanet_r50_fpn_1x_coco.py',
    '../../_base_/calib32_ddp.py'
]

float_checkpoint = 'https://download.openmmlab.com/mmdetection/v2.0/retinanet/retinanet_r50_fpn_1x_coco/retinanet_r50_fpn_1x_coco_20200130-c2398f9e.pth'  # noqa: E501

# Calibrate on training images through the deterministic test pipeline.
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
        _base_.model.data_preprocessor, type='mmdet.DetDataPreprocessor'),
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
