# W8A8 post-training quantization of the fp32 MNIST ResNet-18 for TensorRT
# (explicit Q/DQ): signed symmetric int8 on [-127, 127] for both, weights
# per-channel, activations per-tensor with zero-point 0.
# Scheme: ../_base_/qconfigs/tensorrt_w8a8_minmax.py.
# The model and calibration come from
# ./_base_/mnist/resnet18.py.
#   python tools/ptq.py configs/quantization/ptq/ptq_tensorrt_resnet18_mnist.py
_base_ = ['./_base_/mnist/resnet18.py', '../_base_/qconfigs/tensorrt_w8a8_minmax.py']

model = dict(quantizer=_base_.quantizer)
