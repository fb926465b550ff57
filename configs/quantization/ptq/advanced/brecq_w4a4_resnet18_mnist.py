# W4A4 PTQ of the fp32 MNIST ResNet-18 with BRECQ (block-wise reconstruction,
# activation quantization off inside the block).
#   python tools/ptq.py configs/quantization/ptq/advanced/brecq_w4a4_resnet18_mnist.py
_base_ = ['./naive_w4a4_resnet18_mnist.py']

test_cfg = dict(ptq_passes=[dict(type='brecq', **_base_.reconstruction)])
