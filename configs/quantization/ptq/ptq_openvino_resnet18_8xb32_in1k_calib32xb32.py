# W8A8 post-training quantization of mmcls's ImageNet ResNet-18 for
# OpenVINO, as MMRazor's ptq_openvino_resnet18_8xb32_in1k_calib32xb32. The model and calibration
# come from ./_base_/in1k/resnet18.py; the scheme from
# ../_base_/qconfigs/openvino_w8a8.py.
#   python tools/ptq.py configs/quantization/ptq/ptq_openvino_resnet18_8xb32_in1k_calib32xb32.py
# It needs ImageNet in data/imagenet (mmcls's layout).
_base_ = [
    './_base_/in1k/resnet18.py',
    '../deploy_cfgs/mmcls/classification_openvino_dynamic-224x224.py',  # noqa: E501
    '../_base_/qconfigs/openvino_w8a8.py'
]

model = dict(deploy_cfg=_base_.deploy_cfg, quantizer=_base_.quantizer)
