# W4A8 LSQ quantization-aware training of the keypoint-digit SimpleBaseline-R18 in
# the papers' setting (AcademicQuantizer: fake quants on conv/linear inputs
# and weights; 4-bit per-channel weights, 8-bit activations; the first conv
# and the last layers kept at 8 bit, as LSQ does). Academic: no deploy
# backend runs it.
#   python tools/train.py configs/quantization/qat/pose/lsq_academic_w4a8_simplebaseline_r18_digits.py
_base_ = [
    './lsq_openvino_simplebaseline_r18_digits.py',
    '../_base_/lsq_academic_w4a8.py',
]

model = dict(quantizer=_base_.academic_w4a8_quantizer)

# 4-bit weights need a fourth epoch to recover.
max_epochs = 4
param_scheduler = [dict(_base_.param_scheduler[0], T_max=max_epochs)]
train_cfg = dict(max_epochs=max_epochs, val_interval=max_epochs)
