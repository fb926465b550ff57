# W8A8 post-training quantization of the fp32 MNIST ResNet-18 for ncnn:
# per-channel symmetric int8 weights and per-tensor symmetric int8
# activations, both on [-127, 127] without zero-point, on the inputs of the
# convs and the linear (the layers ncnn runs in int8), rounding half away
# from zero; deployed as ncnn's int8 .param/.bin with these scales.
#   python tools/ptq.py configs/quantization/ptq/ptq_ncnn_resnet18_mnist.py --export ncnn
_base_ = [
    './_base_/mnist/resnet18.py',
    '../_base_/qconfigs/ncnn_w8a8_minmax.py',
]

model = dict(quantizer=_base_.quantizer)
