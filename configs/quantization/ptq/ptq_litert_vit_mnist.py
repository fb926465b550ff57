# W8A8 post-training quantization of the fp32 MNIST ViT for LiteRT (the
# TFLite int8 spec): every linear, matmul, add, GELU and softmax runs in
# int8 (softmax output on the spec's fixed grid 1/256, zero-point -128);
# LayerNorm has no int8 kernel and runs in float between DEQUANTIZE and
# QUANTIZE (docs/deploy.md).
#   python tools/ptq.py configs/quantization/ptq/ptq_litert_vit_mnist.py --export litert
_base_ = [
    './_base_/mnist/vit.py',
    '../_base_/qconfigs/litert_w8a8_minmax_asym.py',
]

model = dict(quantizer=_base_.quantizer)
