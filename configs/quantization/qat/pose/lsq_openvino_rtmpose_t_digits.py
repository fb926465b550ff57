# W8A8 LSQ (learned step size) quantization-aware training of the
# keypoint-digit RTMPose-t for OpenVINO, from its float checkpoint: the first
# batch sets every scale by min-max (as PTQ does), then scales and weights
# are learned together. LSQ's own static estimate (2 mean|x| / sqrt(Qmax))
# clips the GAU's squared-ReLU attention kernel and its small linears hard:
# from it, 2 epochs at lr 1e-4 ended 1.9 AP points below fp32. Validation
# reports mmpose's COCO keypoint AP of the quantized (``qat.coco/AP``) and
# of the float model (``original.``).
#   python tools/train.py configs/quantization/qat/pose/lsq_openvino_rtmpose_t_digits.py
_base_ = [
    '../../ptq/pose/_base_/rtmpose_t_digits.py',
    '../../_base_/qconfigs/openvino_w8a8_lsq_minmax_asym.py',
    './_base_/lsq_openvino.py',
]

model = dict(quantizer=_base_.quantizer)
optim_wrapper = dict(_delete_=True, **_base_.lsq_optim_wrapper)
param_scheduler = _base_.lsq_param_scheduler
train_cfg = dict(_delete_=True, **_base_.lsq_train_cfg)
val_cfg = dict(_delete_=True, type='mmrazor_quant.QATValLoop')
test_cfg = dict(_delete_=True, type='TestLoop')
