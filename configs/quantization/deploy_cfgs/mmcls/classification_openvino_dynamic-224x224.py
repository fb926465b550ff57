# mmdeploy's description of an mmcls classifier deployed to OpenVINO: QDQ
# ONNX with a dynamic batch and image size, OpenVINO optimizing for one
# 224x224 image. MMRazor's OpenVINO PTQ configs take it as a `_base_` and
# pass `deploy_cfg=_base_.deploy_cfg` to MMArchitectureQuant;
# tools/export.py reads it (see docs/deploy.md).
_base_ = ['../_base_/openvino.py']

deploy_cfg = dict(
    onnx_config=dict(
        output_names=['output'],
        optimize=True,
        dynamic_axes=dict(output={0: 'batch'})),
    backend_config=dict(
        model_inputs=[dict(opt_shapes=dict(input=[1, 3, 224, 224]))]),
    codebase_config=dict(type='mmcls', task='Classification'))
