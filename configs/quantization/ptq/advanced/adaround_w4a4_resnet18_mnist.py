# W4A4 PTQ of the fp32 MNIST ResNet-18 with AdaRound (layer-wise learned
# rounding; the layer's input comes from the quantized model).
#   python tools/ptq.py configs/quantization/ptq/advanced/adaround_w4a4_resnet18_mnist.py
_base_ = ['./naive_w4a4_resnet18_mnist.py']

test_cfg = dict(ptq_passes=[dict(type='adaround', **_base_.reconstruction)])
