# TensorRT's W8A8 scheme (explicit Q/DQ): per-channel symmetric int8 weights
# on [-127, 127] (./_base_/w8a8.py), per-tensor signed symmetric
# activations on the same grid with moving-average ranges. A config takes
# `quantizer` (or `global_qconfig`) through `_base_` and states only what
# differs.
_base_ = ['./_base_/w8a8.py']

global_qconfig = dict(
    a_qscheme=dict(
        qdtype='qint8', bit=8, is_symmetry=True, is_symmetric_range=True,
        averaging_constant=0.1))
quantizer = dict(
    type='mmrazor_quant.TensorRTQuantizer', global_qconfig=global_qconfig)
