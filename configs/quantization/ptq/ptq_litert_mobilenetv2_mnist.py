# W8A8 post-training quantization of the fp32 MNIST MobileNetV2 for LiteRT
# (the TFLite int8 spec): per-channel symmetric int8 weights on [-127, 127],
# per-tensor asymmetric int8 activations on [-128, 127], output placement
# with ReLU6 fused into the conv and the add.
#   python tools/ptq.py configs/quantization/ptq/ptq_litert_mobilenetv2_mnist.py --export litert
_base_ = ['./ptq_openvino_mobilenetv2_mnist.py']

# the OpenVINO config's qconfig with asymmetric int8 activations
global_qconfig = dict(a_qscheme=dict(qdtype='qint8', is_symmetry=False))

model = dict(
    quantizer=dict(
        type='mmrazor_quant.LiteRTQuantizer', global_qconfig=global_qconfig))
