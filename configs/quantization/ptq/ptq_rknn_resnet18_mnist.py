# W8A8 post-training quantization of the fp32 MNIST ResNet-18 for RKNN
# (Rockchip's NPU): the OpenVINO config's calibration with RKNNQuantizer's
# placement (outputs, where rknn-toolkit2 fuses) and schemes: per-channel
# symmetric int8 weights, per-tensor asymmetric int8 activations
# (asymmetric_quantized-8). --export rknn builds the .rknn with these qparams
# (make rknn-env) and checks it in the toolkit's simulator.
#   python tools/ptq.py configs/quantization/ptq/ptq_rknn_resnet18_mnist.py --export rknn --num-samples 1000
_base_ = [
    './_base_/mnist/resnet18.py',
    '../_base_/qconfigs/rknn_w8a8_minmax_asym.py',
]

model = dict(quantizer=_base_.quantizer)
