# The backend-independent part of W8A8 PTQ of mmcls's ImageNet ResNet-50:
# ./resnet18.py with mmcls's ResNet-50 (depth 50, a 2048-channel head) and
# its checkpoint; mmcls's two configs share their data, pipelines and
# schedule. A backend's config adds its deploy config and qconfig `_base_`
# and sets `model.deploy_cfg` and `model.quantizer`.
_base_ = ['./resnet18.py']

float_checkpoint = 'https://download.openmmlab.com/mmclassification/v0/resnet/resnet50_8xb32_in1k_20210831-ea4938fc.pth'  # noqa: E501

model = dict(
    architecture=dict(backbone=dict(depth=50), head=dict(in_channels=2048)),
    float_checkpoint=float_checkpoint)
