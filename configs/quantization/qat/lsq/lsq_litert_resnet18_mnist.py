# W8A8 LSQ quantization-aware training of the fp32 MNIST ResNet-18 for
# LiteRT (the TFLite int8 spec: per-channel symmetric int8 weights,
# asymmetric int8 activations), deployed as an int8 .tflite.
#   python tools/train.py configs/quantization/qat/lsq/lsq_litert_resnet18_mnist.py
_base_ = ['./lsq_openvino_resnet18_mnist.py']

# the OpenVINO LSQ config's qconfig with asymmetric int8 activations
global_qconfig = dict(a_qscheme=dict(qdtype='qint8', is_symmetry=False))

model = dict(
    quantizer=dict(
        type='mmrazor_quant.LiteRTQuantizer', global_qconfig=global_qconfig))
