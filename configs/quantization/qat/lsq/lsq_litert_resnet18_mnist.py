# W8A8 LSQ quantization-aware training of the fp32 MNIST ResNet-18 for
# LiteRT (the TFLite int8 spec: per-channel symmetric int8 weights,
# asymmetric int8 activations), deployed as an int8 .tflite.
#   python tools/train.py configs/quantization/qat/lsq/lsq_litert_resnet18_mnist.py
_base_ = ['./lsq_openvino_resnet18_mnist.py']

global_qconfig = dict(
    w_observer=dict(type='mmrazor_quant.LSQPerChannelObserver'),
    a_observer=dict(type='mmrazor_quant.LSQObserver'),
    w_fake_quant=dict(type='mmrazor_quant.LearnableFakeQuantize'),
    a_fake_quant=dict(type='mmrazor_quant.LearnableFakeQuantize'),
    w_qscheme=dict(
        qdtype='qint8', bit=8, is_symmetry=True, is_symmetric_range=True),
    a_qscheme=dict(qdtype='qint8', bit=8, is_symmetry=False),
)

model = dict(
    quantizer=dict(
        type='mmrazor_quant.LiteRTQuantizer', global_qconfig=global_qconfig))
