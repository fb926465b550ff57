# TensorRT's W8A8 scheme (explicit Q/DQ): signed symmetric int8 on
# [-127, 127], weights per-channel, activations per-tensor with
# moving-average ranges. A config takes `quantizer` (or `global_qconfig`)
# through `_base_` and states only what differs.
global_qconfig = dict(
    w_observer=dict(type='mmrazor_quant.PerChannelMinMaxObserver'),
    a_observer=dict(type='mmrazor_quant.MovingAverageMinMaxObserver'),
    w_fake_quant=dict(type='mmrazor_quant.FakeQuantize'),
    a_fake_quant=dict(type='mmrazor_quant.FakeQuantize'),
    w_qscheme=dict(
        qdtype='qint8', bit=8, is_symmetry=True, is_symmetric_range=True),
    a_qscheme=dict(
        qdtype='qint8', bit=8, is_symmetry=True, is_symmetric_range=True,
        averaging_constant=0.1))

quantizer = dict(
    type='mmrazor_quant.TensorRTQuantizer',
    global_qconfig=global_qconfig,
    tracer=dict(type='mmrazor_quant.CustomTracer'))
