# The papers' W4A8 quantizer (../../_base_/lsq_academic_w4a8.py) as the
# digit-canvas YOLO configs use it: 4-bit weights start from LSQ's own
# estimate (2 mean|w| / sqrt(7) per channel), as min-max puts too few of the
# 15 levels where most weights are.
_base_ = ['../../_base_/lsq_academic_w4a8.py']

academic_w4a8_quantizer = dict(
    global_qconfig=dict(
        w_observer=dict(type='mmrazor_quant.LSQPerChannelObserver'),
        a_qscheme=dict(bit=8)))
