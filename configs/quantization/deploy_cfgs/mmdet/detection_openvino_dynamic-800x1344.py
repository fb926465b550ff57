# An mmdet detector deployed to OpenVINO, in mmdeploy's schema: QDQ ONNX of
# backbone, neck and head with a dynamic batch and image size, OpenVINO
# optimizing for one 800x1344 image.
# The graph ends at the head's per-level outputs, named `<group>_<level>`
# (cls_scores_0, ..., bbox_preds_4); box decoding and NMS run outside it,
# so there is no `post_processing` here (mmdeploy's end2end models put NMS
# into the graph and name the outputs dets/labels). A detector whose head
# returns other groups sets output_names (YOLOX adds objectnesses).
_base_ = ['../_base_/openvino.py']

deploy_cfg = dict(
    onnx_config=dict(output_names=['cls_scores', 'bbox_preds']),
    backend_config=dict(
        model_inputs=[dict(opt_shapes=dict(input=[1, 3, 800, 1344]))]),
    codebase_config=dict(type='mmdet', task='ObjectDetection'))
