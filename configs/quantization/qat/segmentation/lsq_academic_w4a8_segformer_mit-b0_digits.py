# W4A8 LSQ quantization-aware training of the digit-segmentation SegFormer MiT-B0
# in the papers' setting (AcademicQuantizer: fake quants on the inputs and
# weights of convs and linears; the first conv and the last layer kept at 8
# bit, as LSQ does), 4-bit per-channel weights, 8-bit activations.
#   python tools/train.py configs/quantization/qat/segmentation/lsq_academic_w4a8_segformer_mit-b0_digits.py \
#       --cfg-options model.float_checkpoint=work_dirs/seg/segformer_mit-b0_digits/epoch_5.pth
_base_ = [
    './lsq_openvino_segformer_mit-b0_digits.py',
    '../_base_/lsq_academic_w4a8.py',
]

model = dict(quantizer=_base_.academic_w4a8_quantizer)

# 4-bit weights need a larger step to recover (one epoch: the SegFormer
# epoch is long on 2 CPU cores).
max_epochs = 1
optim_wrapper = dict(optimizer=dict(lr=2e-4))
param_scheduler = [dict(_base_.param_scheduler[0], T_max=max_epochs)]
train_cfg = dict(max_epochs=max_epochs)
