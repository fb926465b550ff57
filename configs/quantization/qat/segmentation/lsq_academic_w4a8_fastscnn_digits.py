# W4A8 LSQ quantization-aware training of the digit-segmentation Fast-SCNN
# in the papers' setting (AcademicQuantizer: fake quants on the inputs and
# weights of convs and linears; the first conv and the last layer kept at 8
# bit, as LSQ does), 4-bit per-channel weights, 8-bit activations.
#   python tools/train.py configs/quantization/qat/segmentation/lsq_academic_w4a8_fastscnn_digits.py \
#       --cfg-options model.float_checkpoint=work_dirs/seg/fastscnn_digits/epoch_8.pth
_base_ = [
    './lsq_openvino_fastscnn_digits.py',
    '../_base_/lsq_academic_w4a8.py',
]

model = dict(quantizer=_base_.academic_w4a8_quantizer)

# 4-bit weights need a larger step to recover.
max_epochs = 2
optim_wrapper = dict(optimizer=dict(lr=2e-4))
param_scheduler = [dict(_base_.param_scheduler[0], T_max=max_epochs)]
train_cfg = dict(max_epochs=max_epochs)
