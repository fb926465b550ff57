# W4A4 PTQ of the MNIST ResNet-18 with cross-layer equalization (before
# calibration) and AdaRound (layer-wise learned rounding) after it.
#   python tools/ptq.py configs/quantization/ptq/advanced/adaround_w4a4_resnet18_mnist.py
_base_ = ['./qdrop_w4a4_resnet18_mnist.py']

test_cfg = dict(
    ptq_passes=[
        dict(type='equalize_cross_layer'),
        dict(type='adaround', iters=300, num_samples=512, seed=0),
    ])
