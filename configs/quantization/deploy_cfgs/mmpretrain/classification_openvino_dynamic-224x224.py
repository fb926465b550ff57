# mmdeploy's description of an mmpretrain classifier deployed to OpenVINO:
# mmcls's (QDQ ONNX with a dynamic batch and image size, OpenVINO optimizing
# for one 224x224 image) with mmpretrain as the codebase. The mmpretrain PTQ
# configs take it as a `_base_` and pass `deploy_cfg=_base_.deploy_cfg` to
# MMArchitectureQuant; tools/export.py reads it (see docs/deploy.md).
_base_ = ['../mmcls/classification_openvino_dynamic-224x224.py']

deploy_cfg = dict(codebase_config=dict(type='mmpretrain'))
