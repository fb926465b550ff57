# W4A4 post-training quantization of the fp32 MNIST MobileNetV2 in the
# papers' setting (AcademicQuantizer: fake quants on the inputs and weights
# of every conv/linear, the first and last layer included): per-channel
# min/max weights, per-tensor min/max activations, 4 bit everywhere. The baseline of
# docs/analysis.md; `tools/analyze.py ... --mixed-budget 3` writes the
# mixed-precision variant (see ptq_academic_w4a4_mixed3_mobilenetv2_mnist.py).
#   python tools/ptq.py configs/quantization/ptq/mixed/ptq_academic_w4a4_mobilenetv2_mnist.py
_base_ = ['../ptq_openvino_mobilenetv2_mnist.py']

global_qconfig = dict(
    w_observer=dict(type='mmrazor_quant.PerChannelMinMaxObserver'),
    a_observer=dict(type='mmrazor_quant.MinMaxObserver'),
    w_fake_quant=dict(type='mmrazor_quant.FakeQuantize'),
    a_fake_quant=dict(type='mmrazor_quant.FakeQuantize'),
    w_qscheme=dict(
        qdtype='qint8', bit=4, is_symmetry=True, is_symmetric_range=True),
    a_qscheme=dict(qdtype='quint8', bit=4, is_symmetry=False),
)

model = dict(
    quantizer=dict(
        _delete_=True,
        type='mmrazor_quant.AcademicQuantizer',
        global_qconfig=global_qconfig))
