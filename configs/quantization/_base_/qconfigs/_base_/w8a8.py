# What every backend's W8A8 scheme shares: per-channel symmetric int8
# weights on [-127, 127] (min-max ranges), per-tensor activations with
# moving-average ranges, plain FakeQuantize, and the default tracer. A
# backend's scheme (../<backend>_w8a8*.py) adds its quantizer type and its
# activation grid (`a_qscheme`).
global_qconfig = dict(
    w_observer=dict(type='mmrazor_quant.PerChannelMinMaxObserver'),
    a_observer=dict(type='mmrazor_quant.MovingAverageMinMaxObserver'),
    w_fake_quant=dict(type='mmrazor_quant.FakeQuantize'),
    a_fake_quant=dict(type='mmrazor_quant.FakeQuantize'),
    w_qscheme=dict(
        qdtype='qint8', bit=8, is_symmetry=True, is_symmetric_range=True))

quantizer = dict(
    global_qconfig=global_qconfig,
    tracer=dict(type='mmrazor_quant.CustomTracer'))
