# W4A8 LSQ quantization-aware training of the digit-canvas RTMDet-tiny in the
# papers' setting (AcademicQuantizer: fake quants on conv inputs and
# weights; the first and the last conv kept at 8 bit, as LSQ
# does), from its float checkpoint.
#   python tools/train.py configs/quantization/qat/yolo/lsq_academic_w4a8_rtmdet_tiny_digits.py \
#       --cfg-options model.float_checkpoint=work_dirs/yolo/rtmdet_tiny_digits/epoch_15.pth
_base_ = [
    './lsq_openvino_rtmdet_tiny_digits.py',
    './_base_/lsq_academic_w4a8.py',
]

model = dict(quantizer=_base_.academic_w4a8_quantizer)

# 4-bit weights need more than the W8A8 fine-tuning: 8 epochs from lr 2e-4,
# cosine to zero, BN statistics frozen from epoch 5.
max_epochs = 8
optim_wrapper = dict(optimizer=dict(lr=2e-4))
param_scheduler = [dict(_base_.param_scheduler[0], T_max=max_epochs)]
train_cfg = dict(
    max_epochs=max_epochs, val_interval=max_epochs, freeze_bn_begin=5)
