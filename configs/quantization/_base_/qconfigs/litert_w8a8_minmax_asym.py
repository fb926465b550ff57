# LiteRT's W8A8 scheme (TFLite's int8 spec): per-channel symmetric int8 weights
# on [-127, 127], per-tensor asymmetric int8 activations (./_base_/w8a8.py),
# ranges from the calibration set's minimum and maximum. A config takes
# `quantizer` (or `global_qconfig`) through `_base_` and states only what
# differs.
_base_ = ['./_base_/w8a8_minmax.py']

global_qconfig = dict(a_qscheme=dict(qdtype='qint8', bit=8, is_symmetry=False))
quantizer = dict(
    type='mmrazor_quant.LiteRTQuantizer', global_qconfig=global_qconfig)
