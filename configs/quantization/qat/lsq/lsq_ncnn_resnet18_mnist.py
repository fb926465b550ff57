# W8A8 LSQ quantization-aware training of the fp32 MNIST ResNet-18 for ncnn
# (symmetric int8 on [-127, 127] for per-channel weights and per-tensor
# conv/linear inputs, rounding half away from zero); the learned scales are
# written, inverted, into ncnn's int8 .bin.
#   python tools/train.py configs/quantization/qat/lsq/lsq_ncnn_resnet18_mnist.py
_base_ = ['./lsq_openvino_resnet18_mnist.py']

global_qconfig = dict(
    w_observer=dict(type='mmrazor_quant.LSQPerChannelObserver'),
    a_observer=dict(type='mmrazor_quant.LSQObserver'),
    w_fake_quant=dict(type='mmrazor_quant.LearnableFakeQuantize'),
    a_fake_quant=dict(type='mmrazor_quant.LearnableFakeQuantize'),
    w_qscheme=dict(
        qdtype='qint8', bit=8, is_symmetry=True, is_symmetric_range=True),
    a_qscheme=dict(
        qdtype='qint8', bit=8, is_symmetry=True, is_symmetric_range=True),
)

model = dict(
    quantizer=dict(
        type='mmrazor_quant.NCNNQuantizer', global_qconfig=global_qconfig))
