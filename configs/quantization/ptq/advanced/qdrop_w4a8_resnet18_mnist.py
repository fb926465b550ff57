# W4A8 PTQ of the fp32 MNIST ResNet-18 with QDrop (block-wise reconstruction,
# each activation inside the block kept float with probability 0.5).
#   python tools/ptq.py configs/quantization/ptq/advanced/qdrop_w4a8_resnet18_mnist.py
_base_ = ['./naive_w4a8_resnet18_mnist.py']

test_cfg = dict(
    ptq_passes=[dict(type='qdrop', drop_prob=0.5, **_base_.reconstruction)])
