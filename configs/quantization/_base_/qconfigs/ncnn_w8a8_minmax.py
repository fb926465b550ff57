# ncnn's W8A8 scheme: per-channel symmetric int8 weights and per-tensor
# symmetric int8 activations, both on [-127, 127] (./_base_/w8a8.py), ranges
# from the calibration set's minimum and maximum. A config takes `quantizer`
# (or `global_qconfig`) through `_base_` and states only what differs.
_base_ = ['./_base_/w8a8_minmax.py']

global_qconfig = dict(
    a_qscheme=dict(
        qdtype='qint8', bit=8, is_symmetry=True, is_symmetric_range=True))
quantizer = dict(
    type='mmrazor_quant.NCNNQuantizer', global_qconfig=global_qconfig)
