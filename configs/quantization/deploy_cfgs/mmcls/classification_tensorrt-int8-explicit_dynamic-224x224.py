# mmdeploy's description of an mmcls classifier deployed to TensorRT in
# explicit int8 mode (the ONNX carries the Q/DQ pairs): dynamic batch and
# image size, an optimization profile of 1 to 8 images of 224x224.
# MMRazor's TensorRT PTQ configs take it as a `_base_` and pass
# `deploy_cfg=_base_.deploy_cfg` to MMArchitectureQuant; tools/export.py
# reads it (see docs/deploy.md).
_base_ = ['../_base_/tensorrt_int8.py']

deploy_cfg = dict(
    onnx_config=dict(
        output_names=['output'],
        input_shape=[224, 224],  # [width, height] of the example input
        optimize=True,
        dynamic_axes=dict(output={0: 'batch'})),
    backend_config=dict(model_inputs=[
        dict(input_shapes=dict(input=dict(
            min_shape=[1, 3, 224, 224],
            opt_shape=[4, 3, 224, 224],
            max_shape=[8, 3, 224, 224])))
    ]),
    codebase_config=dict(type='mmcls', task='Classification'))
