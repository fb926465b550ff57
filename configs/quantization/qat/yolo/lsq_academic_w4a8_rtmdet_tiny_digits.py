# W4A8 LSQ quantization-aware training of the digit-canvas RTMDet-tiny in the
# papers' setting (AcademicQuantizer: fake quants on conv inputs and
# weights; the first and the last conv kept at 8 bit, as LSQ
# does), from its float checkpoint.
#   python tools/train.py configs/quantization/qat/yolo/lsq_academic_w4a8_rtmdet_tiny_digits.py \
#       --cfg-options model.float_checkpoint=work_dirs/yolo/rtmdet_tiny_digits/epoch_15.pth
_base_ = ['./lsq_openvino_rtmdet_tiny_digits.py']

model = dict(
    quantizer=dict(
        type='mmrazor_quant.AcademicQuantizer',
        first_last_bit=8,
        global_qconfig=dict(
            # 4-bit weights start from LSQ's own estimate
            # (2 mean|w| / sqrt(7) per channel): min-max puts too few of
            # the 15 levels where most weights are.
            w_observer=dict(type='mmrazor_quant.LSQPerChannelObserver'),
            w_qscheme=dict(bit=4), a_qscheme=dict(bit=8))))

# 4-bit weights need more than the W8A8 fine-tuning: 8 epochs from lr 2e-4,
# cosine to zero, BN statistics frozen from epoch 5.
max_epochs = 8
optim_wrapper = dict(optimizer=dict(lr=2e-4))
param_scheduler = [dict(_base_.param_scheduler[0], T_max=max_epochs)]
train_cfg = dict(
    max_epochs=max_epochs, val_interval=max_epochs, freeze_bn_begin=5)
