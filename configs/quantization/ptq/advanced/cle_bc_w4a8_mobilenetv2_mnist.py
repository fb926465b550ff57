# W4A8 PTQ of the MNIST MobileNetV2 with the data-free-style passes only:
# cross-layer equalization (before calibration) and empirical bias
# correction (after it).
#   python tools/ptq.py configs/quantization/ptq/advanced/cle_bc_w4a8_mobilenetv2_mnist.py
_base_ = ['./naive_w4a8_mobilenetv2_mnist.py']

test_cfg = dict(
    ptq_passes=[
        dict(type='equalize_cross_layer'),
        dict(type='correct_bias', num_samples=256),
    ])
