# W4A8 PTQ of the fp32 MNIST MobileNetV2 with BRECQ (block-wise reconstruction,
# activation quantization off inside the block).
#   python tools/ptq.py configs/quantization/ptq/advanced/brecq_w4a8_mobilenetv2_mnist.py
_base_ = ['./naive_w4a8_mobilenetv2_mnist.py']

test_cfg = dict(ptq_passes=[dict(type='brecq', **_base_.reconstruction)])
