# The ONNX half of a deploy config in mmdeploy's schema: a Q/DQ graph at
# opset 13 (MMRazor's say 11, which has no per-channel QuantizeLinear), one
# input named `input` with a dynamic batch and image size. A backend's base
# (./openvino.py, ./tensorrt_int8.py) adds `backend_config`; a task's
# config adds its outputs, shapes and `codebase_config`.
deploy_cfg = dict(
    onnx_config=dict(
        type='onnx',
        export_params=True,
        keep_initializers_as_inputs=False,
        opset_version=13,
        save_file='end2end.onnx',
        input_names=['input'],
        input_shape=None,
        dynamic_axes=dict(input={0: 'batch', 2: 'height', 3: 'width'})))
