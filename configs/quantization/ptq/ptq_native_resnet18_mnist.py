# W8A8 post-training quantization of the fp32 MNIST ResNet-18 for torch's
# native int8 engine (x86/fbgemm): per-channel signed int8 weights, unsigned
# affine (asymmetric) activations on the op outputs.
#   python tools/ptq.py configs/quantization/ptq/ptq_native_resnet18_mnist.py
_base_ = ['./ptq_openvino_resnet18_mnist.py']

# The OpenVINO config's calibration; torch's weight grid reaches
# -128 and its activations are affine.
global_qconfig = dict(
    w_qscheme=dict(_delete_=True, qdtype='qint8', bit=8, is_symmetry=True),
    a_qscheme=dict(is_symmetry=False))

model = dict(
    quantizer=dict(
        type='mmrazor_quant.TorchNativeQuantizer',
        global_qconfig=global_qconfig))
