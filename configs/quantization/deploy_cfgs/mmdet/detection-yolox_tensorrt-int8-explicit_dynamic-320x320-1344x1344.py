# mmdet's YOLOX deployed to TensorRT in explicit int8 mode:
# ./detection_tensorrt-int8-explicit_dynamic-320x320-1344x1344.py with
# YOLOXHead's three output groups (objectnesses besides the class scores and
# boxes), the profile optimal at one 640x640 image.
_base_ = ['./detection_tensorrt-int8-explicit_dynamic-320x320-1344x1344.py']

deploy_cfg = dict(
    onnx_config=dict(
        output_names=['cls_scores', 'bbox_preds', 'objectnesses']),
    backend_config=dict(model_inputs=[
        dict(input_shapes=dict(input=dict(
            min_shape=[1, 3, 320, 320], opt_shape=[1, 3, 640, 640],
            max_shape=[1, 3, 1344, 1344])))
    ]))
