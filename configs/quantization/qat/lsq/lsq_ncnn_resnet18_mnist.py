# W8A8 LSQ quantization-aware training of the fp32 MNIST ResNet-18 for ncnn
# (symmetric int8 on [-127, 127] for per-channel weights and per-tensor
# conv/linear inputs, rounding half away from zero); the learned scales are
# written, inverted, into ncnn's int8 .bin.
#   python tools/train.py configs/quantization/qat/lsq/lsq_ncnn_resnet18_mnist.py
_base_ = ['./lsq_openvino_resnet18_mnist.py']

# the OpenVINO LSQ config's qconfig with signed activations on [-127, 127]
global_qconfig = dict(
    a_qscheme=dict(qdtype='qint8', is_symmetric_range=True))

model = dict(
    quantizer=dict(
        type='mmrazor_quant.NCNNQuantizer', global_qconfig=global_qconfig))
