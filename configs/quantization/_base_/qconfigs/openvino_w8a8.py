# OpenVINO's W8A8 scheme: per-channel symmetric int8 weights on
# [-127, 127], per-tensor unsigned symmetric activations with
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
        qdtype='quint8', bit=8, is_symmetry=True, averaging_constant=0.1))

quantizer = dict(
    type='mmrazor_quant.OpenVINOQuantizer',
    global_qconfig=global_qconfig,
    tracer=dict(type='mmrazor_quant.CustomTracer'))
