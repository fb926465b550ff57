# W4A8 PTQ of the fp32 MNIST MobileNetV2: calibration only (nearest rounding).
# The adaround_/brecq_/qdrop_w4a8_mobilenetv2_mnist.py configs add their pass.
#   python tools/ptq.py configs/quantization/ptq/advanced/naive_w4a8_mobilenetv2_mnist.py
_base_ = ['./_lowbit_mobilenetv2_mnist.py']

model = dict(
    quantizer=dict(
        global_qconfig=dict(
            w_qscheme=dict(bit=4), a_qscheme=dict(bit=8))))
