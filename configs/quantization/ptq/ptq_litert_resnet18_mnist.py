# W8A8 post-training quantization of the fp32 MNIST ResNet-18 for LiteRT
# (the TFLite int8 spec): per-channel symmetric int8 weights on [-127, 127],
# per-tensor asymmetric int8 activations on [-128, 127], output placement
# with ReLU fused into the conv and the add.
#   python tools/ptq.py configs/quantization/ptq/ptq_litert_resnet18_mnist.py --export litert
_base_ = [
    './_base_/mnist/resnet18.py',
    '../_base_/qconfigs/litert_w8a8_minmax_asym.py',
]

model = dict(quantizer=_base_.quantizer)
