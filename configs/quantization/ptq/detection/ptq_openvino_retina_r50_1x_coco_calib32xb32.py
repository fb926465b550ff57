# W8A8 post-training quantization of mmdet's RetinaNet-R50-FPN (COCO) for
# OpenVINO, in MMRazor's schema: per-channel symmetric int8 weights on
# [-127, 127], per-tensor unsigned symmetric activations; the head's
# post-processing (predict_by_feat) and losses (loss_by_feat) stay out of
# the graph.
#   python tools/ptq.py configs/quantization/ptq/detection/ptq_openvino_retina_r50_1x_coco_calib32xb32.py
# It needs COCO in data/coco (mmdet's layout).
_base_ = [
    'mmdet::retinanet/retinanet_r50_fpn_1x_coco.py',
    '../../deploy_cfgs/mmdet/detection_openvino_dynamic-800x1344.py',  # noqa: E501
    '../../_base_/qconfigs/openvino_w8a8.py',
    '../_base_/calib32_ddp.py'
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
    deploy_cfg=_base_.deploy_cfg,
    float_checkpoint=float_checkpoint,
    quantizer=dict(
        _base_.quantizer,
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
