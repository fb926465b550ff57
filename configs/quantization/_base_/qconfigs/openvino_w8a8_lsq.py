# ./openvino_w8a8.py's grids with LSQ's learned scales (quantization-aware
# training): the first batch sets every scale to LSQ's static estimate, then
# scales and weights are learned together.
_base_ = ['./openvino_w8a8.py']

global_qconfig = dict(
    w_observer=dict(type='mmrazor_quant.LSQPerChannelObserver'),
    a_observer=dict(type='mmrazor_quant.LSQObserver'),
    w_fake_quant=dict(type='mmrazor_quant.LearnableFakeQuantize'),
    a_fake_quant=dict(type='mmrazor_quant.LearnableFakeQuantize'),
    a_qscheme=dict(_delete_=True, qdtype='quint8', bit=8, is_symmetry=True))
quantizer = dict(global_qconfig=global_qconfig)
