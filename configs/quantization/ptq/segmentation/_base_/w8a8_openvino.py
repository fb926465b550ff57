# The W8A8 OpenVINO quantizer and the PTQ loop of the digit-segmentation
# configs (keys their fp32 bases do not have): per-channel symmetric int8
# weights on [-127, 127], per-tensor unsigned symmetric activations; no
# tracer skips of their own (the mmseg adapter keeps the losses and the
# per-sample post-processing out of the graphs).
quantizer = dict(
    type='mmrazor_quant.OpenVINOQuantizer',
    global_qconfig=dict(
        w_observer=dict(type='mmrazor_quant.PerChannelMinMaxObserver'),
        a_observer=dict(type='mmrazor_quant.MovingAverageMinMaxObserver'),
        w_fake_quant=dict(type='mmrazor_quant.FakeQuantize'),
        a_fake_quant=dict(type='mmrazor_quant.FakeQuantize'),
        w_qscheme=dict(qdtype='qint8', bit=8, is_symmetry=True,
                       is_symmetric_range=True),
        a_qscheme=dict(qdtype='quint8', bit=8, is_symmetry=True,
                       averaging_constant=0.1)),
    tracer=dict(type='mmrazor_quant.CustomTracer'))

# 8 batches of 16 training canvases through the deterministic test pipeline
# (calibrate_dataloader of configs/_base_/datasets/digit_canvas_seg.py).
ptq_loop = dict(type='mmrazor_quant.PTQLoop', calibrate_steps=8)
