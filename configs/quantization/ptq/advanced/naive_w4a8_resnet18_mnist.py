# W4A8 PTQ of the fp32 MNIST ResNet-18: calibration only (nearest rounding).
# The adaround_/brecq_/qdrop_w4a8_resnet18_mnist.py configs add their pass.
#   python tools/ptq.py configs/quantization/ptq/advanced/naive_w4a8_resnet18_mnist.py
_base_ = ['./_lowbit_resnet18_mnist.py']

model = dict(
    quantizer=dict(
        global_qconfig=dict(
            w_qscheme=dict(bit=4), a_qscheme=dict(bit=8))))
