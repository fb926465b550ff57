# W8A8 post-training quantization of the fp32 MNIST ViT for OpenVINO, with
# NNCF's transformer placement (model_type='transformer'): linear layers and
# the Q @ K^T matmul run in int8; residual adds, LayerNorm, GELU, softmax
# and attn @ V stay float (docs/backends.md).
#   python tools/ptq.py configs/quantization/ptq/ptq_openvino_vit_mnist.py
_base_ = [
    './_base_/mnist/vit.py', '../_base_/qconfigs/_base_/w8a8_minmax.py'
]

# The shared W8A8 grid, but the token features are signed: signed symmetric
# activations, which OpenVINO's Q @ K^T takes in int8 (asymmetric ones would
# run the score matmul, softmax and attn @ V in float).
global_qconfig = dict(a_qscheme=dict(qdtype='qint8', bit=8, is_symmetry=True))

model = dict(
    quantizer=dict(
        type='mmrazor_quant.OpenVINOQuantizer',
        model_type='transformer',
        global_qconfig=dict(_base_.global_qconfig, **global_qconfig)))
