# mmdeploy's description of an mmcls classifier deployed to OpenVINO: QDQ
# ONNX with a dynamic batch and image size, OpenVINO optimizing for one
# 224x224 image. MMRazor's OpenVINO PTQ configs take it as a `_base_` and
# pass `deploy_cfg=_base_.deploy_cfg` to MMArchitectureQuant;
# tools/export.py reads it (see docs/deploy.md).
deploy_cfg = dict(
    onnx_config=dict(
        type='onnx',
        export_params=True,
        keep_initializers_as_inputs=False,
        # MMRazor's say 11, which has no per-channel QuantizeLinear.
        opset_version=13,
        save_file='end2end.onnx',
        input_names=['input'],
        output_names=['output'],
        input_shape=None,
        optimize=True,
        dynamic_axes=dict(
            input={0: 'batch', 2: 'height', 3: 'width'},
            output={0: 'batch'})),
    backend_config=dict(
        type='openvino',
        model_inputs=[dict(opt_shapes=dict(input=[1, 3, 224, 224]))]),
    codebase_config=dict(type='mmcls', task='Classification'))
