# W8A8 post-training quantization of the fp32 MNIST MobileNetV2 for OpenVINO:
# per-channel symmetric int8 weights on [-127, 127], per-tensor unsigned
# symmetric activations (zero-point 0 after ReLU).
# Scheme: ../_base_/qconfigs/openvino_w8a8_minmax.py.
# The model and calibration come from
# ./_base_/mnist/mobilenetv2.py.
#   python tools/ptq.py configs/quantization/ptq/ptq_openvino_mobilenetv2_mnist.py
_base_ = ['./_base_/mnist/mobilenetv2.py', '../_base_/qconfigs/openvino_w8a8_minmax.py']

model = dict(quantizer=_base_.quantizer)
