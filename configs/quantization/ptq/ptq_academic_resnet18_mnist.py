# W8A8 post-training quantization of the fp32 MNIST ResNet-18 in the papers'
# setting: fake quants on the inputs and weights of conv/linear only,
# affine (asymmetric) int8 for both, weights per-channel.
#   python tools/ptq.py configs/quantization/ptq/ptq_academic_resnet18_mnist.py
_base_ = ['./ptq_openvino_resnet18_mnist.py']

# The OpenVINO config's calibration, with affine weights and
# activations.
global_qconfig = dict(
    w_qscheme=dict(_delete_=True, qdtype='qint8', bit=8, is_symmetry=False),
    a_qscheme=dict(is_symmetry=False))

model = dict(
    quantizer=dict(
        type='mmrazor_quant.AcademicQuantizer',
        global_qconfig=global_qconfig))
