# W2A4 PTQ of the fp32 MNIST MobileNetV2 with QDrop (block-wise reconstruction,
# each activation inside the block kept float with probability 0.5).
#   python tools/ptq.py configs/quantization/ptq/advanced/qdrop_w2a4_mobilenetv2_mnist.py
_base_ = ['./naive_w2a4_mobilenetv2_mnist.py']

test_cfg = dict(
    ptq_passes=[dict(type='qdrop', drop_prob=0.5, **_base_.reconstruction)])
