# W8A8 post-training quantization of mmdet's YOLOX-s (COCO) for TensorRT,
# in MMRazor's schema: per-channel symmetric int8 weights on [-127, 127],
# per-tensor signed symmetric activations; YOLOXHead's post-processing
# and losses stay out of the graph.
#   python tools/ptq.py configs/quantization/ptq/detection/ptq_tensorrt_yolox_s_8xb8-300e_coco_calib32xb32.py
# It needs COCO in data/coco (mmdet's layout).
_base_ = [
    'mmdet::yolox/yolox_s_8xb8-300e_coco.py',
    '../../deploy_cfgs/mmdet/detection_tensorrt-int8-explicit_dynamic-320x320-1344x1344.py'  # noqa: E501
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
            dict(input_shapes=dict(input=dict(
                min_shape=[1, 3, 320, 320], opt_shape=[1, 3, 640, 640],
                max_shape=[1, 3, 1344, 1344])))
        ]))

# Calibrate on training images (the COCO set inside the mosaic/mixup
# wrapper) through the deterministic test pipeline.
calibrate_dataloader = dict(
    batch_size=32,
    num_workers=5,
    dataset=dict(_base_.train_dataset.dataset,
                 pipeline=_base_.test_pipeline),
    sampler=dict(type='DefaultSampler', shuffle=True))

global_qconfig = dict(
    w_observer=dict(type='mmrazor_quant.PerChannelMinMaxObserver'),
    a_observer=dict(type='mmrazor_quant.MovingAverageMinMaxObserver'),
    w_fake_quant=dict(type='mmrazor_quant.FakeQuantize'),
    a_fake_quant=dict(type='mmrazor_quant.FakeQuantize'),
    w_qscheme=dict(
        qdtype='qint8', bit=8, is_symmetry=True, is_symmetric_range=True),
    a_qscheme=dict(qdtype='qint8', bit=8, is_symmetry=True,
                   is_symmetric_range=True,
                   averaging_constant=0.1),
)

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
        type='mmrazor_quant.TensorRTQuantizer',
        global_qconfig=global_qconfig,
        tracer=dict(
            type='mmrazor_quant.CustomTracer',
            skipped_methods=[
                'mmdet.models.dense_heads.yolox_head.YOLOXHead.'
                'predict_by_feat',
                'mmdet.models.dense_heads.yolox_head.YOLOXHead.'
                'loss_by_feat',
            ])))

model_wrapper_cfg = dict(
    type='mmrazor_quant.MMArchitectureQuantDDP',
    broadcast_buffers=False,
    find_unused_parameters=True)

# YOLOX's training hooks (mode switch, EMA, norm sync) belong to training.
custom_hooks = []

test_cfg = dict(
    _delete_=True,
    type='mmrazor_quant.PTQLoop',
    calibrate_dataloader=calibrate_dataloader,
    calibrate_steps=32)
