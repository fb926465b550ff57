# mmdet's YOLOX deployed to OpenVINO: ./detection_openvino_dynamic-800x1344.py
# with YOLOXHead's three output groups (objectnesses besides the class
# scores and boxes), OpenVINO optimizing for one 640x640 image.
_base_ = ['./detection_openvino_dynamic-800x1344.py']

deploy_cfg = dict(
    onnx_config=dict(
        output_names=['cls_scores', 'bbox_preds', 'objectnesses']),
    backend_config=dict(
        model_inputs=[dict(opt_shapes=dict(input=[1, 3, 640, 640]))]))
