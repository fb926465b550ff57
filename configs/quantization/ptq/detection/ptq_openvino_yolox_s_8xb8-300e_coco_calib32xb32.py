# W8A8 post-training quantization of mmdet's YOLOX-s (COCO) for OpenVINO,
# in MMRazor's schema: per-channel symmetric int8 weights on [-127, 127],
# per-tensor unsigned symmetric activations. The model, calibration and
# tracer come from _base_/yolox_s_coco.py; the scheme from the OpenVINO
# qconfig base.
#   python tools/ptq.py configs/quantization/ptq/detection/ptq_openvino_yolox_s_8xb8-300e_coco_calib32xb32.py
# It needs COCO in data/coco (mmdet's layout).
_base_ = [
    '_base_/yolox_s_coco.py',
    '../../deploy_cfgs/mmdet/detection_openvino_dynamic-800x1344.py',  # noqa: E501
    '../../_base_/qconfigs/openvino_w8a8.py',
]

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

model = dict(deploy_cfg=deploy_cfg, quantizer=_base_.quantizer)
