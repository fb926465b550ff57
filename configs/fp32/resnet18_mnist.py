_base_ = [
    'mmcls::_base_/models/resnet18_cifar.py',
    '../_base_/datasets/mnist5k.py',
    '../_base_/schedules/mnist5k_adamw_cosine.py',
    '../_base_/default_runtime.py',
]

# ResNet_CIFAR-18 (3x3 stem, no max-pool) on 1-channel 28x28 digits, at a
# quarter of the usual width: 2.8 M instead of 11.2 M parameters, ~4x less
# CPU time, and still far more capacity than MNIST needs.
model = dict(
    backbone=dict(in_channels=1, stem_channels=32, base_channels=32),
    head=dict(in_channels=256))
