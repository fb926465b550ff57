# mmcls's ImageNet ResNet-50 (MMRazor's setting) wrapped for quantization:
# ./resnet18_in1k.py with mmcls's ResNet-50 (depth 50, a 2048-channel head)
# and its checkpoint; mmcls's two configs share their data and schedule.
_base_ = ['./resnet18_in1k.py']

float_checkpoint = 'https://download.openmmlab.com/mmclassification/v0/resnet/resnet50_8xb32_in1k_20210831-ea4938fc.pth'  # noqa: E501

model = dict(
    architecture=dict(backbone=dict(depth=50), head=dict(in_channels=2048)),
    float_checkpoint=float_checkpoint)
