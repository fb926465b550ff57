# OpenVINO's W8A8 scheme: per-channel symmetric int8 weights on
# [-127, 127] (./_base_/w8a8.py), per-tensor unsigned symmetric activations
# with moving-average ranges. A config takes `quantizer` (or
# `global_qconfig`) through `_base_` and states only what differs.
_base_ = ['./_base_/w8a8.py']

global_qconfig = dict(
    a_qscheme=dict(
        qdtype='quint8', bit=8, is_symmetry=True, averaging_constant=0.1))
quantizer = dict(
    type='mmrazor_quant.OpenVINOQuantizer', global_qconfig=global_qconfig)
