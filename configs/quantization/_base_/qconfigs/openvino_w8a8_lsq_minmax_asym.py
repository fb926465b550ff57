# ./openvino_w8a8_minmax_asym.py with LSQ's learnable fake quants
# (quantization-aware training): the first batch sets every scale (and the
# activations' zero-points) by min-max, as PTQ does, then the scales and
# weights are learned together; the zero-points stay the first batch's.
# LSQ's own static estimate (2 mean|x| / sqrt(Qmax)) clips the SiLU
# networks' small activations hard (docs/pose.md, docs/yolo.md).
_base_ = ['./openvino_w8a8_minmax_asym.py']

global_qconfig = dict(
    w_fake_quant=dict(type='mmrazor_quant.LearnableFakeQuantize'),
    a_fake_quant=dict(type='mmrazor_quant.LearnableFakeQuantize'))
quantizer = dict(global_qconfig=global_qconfig)
