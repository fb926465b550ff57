# W8A8 post-training quantization of the fp32 MNIST MobileNetV2 for LiteRT
# (the TFLite int8 spec): per-channel symmetric int8 weights on [-127, 127],
# per-tensor asymmetric int8 activations on [-128, 127], output placement
# with ReLU6 fused into the conv and the add.
#   python tools/ptq.py configs/quantization/ptq/ptq_litert_mobilenetv2_mnist.py --export litert
_base_ = ['./ptq_openvino_mobilenetv2_mnist.py']

global_qconfig = dict(
    w_observer=dict(type='mmrazor_quant.PerChannelMinMaxObserver'),
    a_observer=dict(type='mmrazor_quant.MinMaxObserver'),
    w_fake_quant=dict(type='mmrazor_quant.FakeQuantize'),
    a_fake_quant=dict(type='mmrazor_quant.FakeQuantize'),
    w_qscheme=dict(
        qdtype='qint8', bit=8, is_symmetry=True, is_symmetric_range=True),
    a_qscheme=dict(qdtype='qint8', bit=8, is_symmetry=False),
)

model = dict(
    quantizer=dict(
        type='mmrazor_quant.LiteRTQuantizer', global_qconfig=global_qconfig))
