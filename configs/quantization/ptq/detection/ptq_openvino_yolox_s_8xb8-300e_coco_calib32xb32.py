# W8A8 post-training quantization of mmdet's YOLOX-s (COCO) for OpenVINO,
# in MMRazor's schema: per-channel symmetric int8 weights on [-127, 127],
# per-tensor unsigned symmetric activations. The model and calibration
# come from _base_/yolox_s_coco.py; the scheme from the OpenVINO
# qconfig base.
#   python tools/ptq.py configs/quantization/ptq/detection/ptq_openvino_yolox_s_8xb8-300e_coco_calib32xb32.py
# It needs COCO in data/coco (mmdet's layout).
_base_ = [
    '_base_/yolox_s_coco.py',
    '../../deploy_cfgs/mmdet/detection-yolox_openvino_dynamic-640x640.py',  # noqa: E501
    '../../_base_/qconfigs/openvino_w8a8.py',
]

model = dict(deploy_cfg=_base_.deploy_cfg, quantizer=_base_.quantizer)
