# W8A8 post-training quantization of mmdet's YOLOX-s (COCO) for OpenVINO,
# in MMRazor's schema: per-channel symmetric int8 weights on [-127, 127],
# per-tensor unsigned symmetric activations; YOLOXHead's post-processing
# and losses stay out of the graph.
#   python tools/ptq.py configs/quantization/ptq/detection/ptq_openvino_yolox_s_8xb8-300e_coco_calib32xb32.py
# It needs COCO in data/coco (mmdet's layout).
_base_ = [
    'mmdet::yolox/yolox_s_8xb8-300e_coco.py',
    '../../deploy_cfgs/mmdet/detection_openvino_dynamic-800x1344.py',  # noqa: E501
    '../../_base_/qconfigs/openvino_w8a8.py',
    '../_base_/calib32_ddp.py'
]

float_checkpoint = 'https://download.openmmlab.com/mmdetection/v2.0/yolox/yolox_s_8x8_300e_coco/yolox_s_8x8_300e_coco_20211121_095711-4592a793.pth'  # noqa: E501

# The deploy config's, for YOLOXHead's three output groups at 640x640;
# tools/export.py writes the head's raw outputs (no post-processing).
deploy_cfg = dict(
    _base_.deploy_cfg,
    onnx_config=dict(
        _base_.deploy_cfg.onnx_config,
        output_names=['cls_scores', 'bbox_preds', 'objectnesses']),
    backend_config=dict(
        _base_.deploy_cfg.backend_config,
        model_inputs=[
            dict(opt_shapes=dict(input=[1, 3, 640, 640]))
        ]))

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
    deploy_cfg=deploy_cfg,
    float_checkpoint=float_checkpoint,
    quantizer=dict(
        _base_.quantizer,
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
