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
            w_qscheme=dict(bit=4), a_qscheme=dict(bit=8))))
