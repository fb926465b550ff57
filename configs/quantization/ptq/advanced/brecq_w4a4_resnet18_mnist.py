# W4A4 PTQ of the MNIST ResNet-18 with BRECQ (block-wise reconstruction of
# mmcls BasicBlocks, activation quantization off inside the block).
#   python tools/ptq.py configs/quantization/ptq/advanced/brecq_w4a4_resnet18_mnist.py
_base_ = ['./qdrop_w4a4_resnet18_mnist.py']

test_cfg = dict(
    ptq_passes=[dict(type='brecq', iters=300, num_samples=512, seed=0)])
