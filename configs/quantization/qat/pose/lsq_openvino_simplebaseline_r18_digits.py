# W8A8 LSQ (learned step size) quantization-aware training of the
# keypoint-digit SimpleBaseline-R18 for OpenVINO, from its float checkpoint: the first
# batch sets every scale to LSQ's static estimate, then scales and weights
# are learned together. Validation reports mmpose's COCO keypoint AP of the
# quantized (``qat.coco/AP``) and of the float model (``original.``).
#   python tools/train.py configs/quantization/qat/pose/lsq_openvino_simplebaseline_r18_digits.py
_base_ = [
    '../../ptq/pose/_base_/simplebaseline_r18_digits.py',
    '../../_base_/qconfigs/openvino_w8a8_lsq.py',
    './_base_/lsq_openvino.py',
]

model = dict(quantizer=_base_.quantizer)
optim_wrapper = dict(_delete_=True, **_base_.lsq_optim_wrapper)
param_scheduler = _base_.lsq_param_scheduler
train_cfg = dict(_delete_=True, **_base_.lsq_train_cfg)
val_cfg = dict(_delete_=True, type='mmrazor_quant.QATValLoop')
test_cfg = dict(_delete_=True, type='TestLoop')
