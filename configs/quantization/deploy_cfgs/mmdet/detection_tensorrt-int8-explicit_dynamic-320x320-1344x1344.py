# An mmdet detector deployed to TensorRT in explicit int8 mode, in
# mmdeploy's schema: QDQ ONNX of backbone, neck and head with a dynamic
# batch and image size, one image from 320x320 to 1344x1344.
# The graph ends at the head's per-level outputs, named `<group>_<level>`
# (cls_scores_0, ..., bbox_preds_4); box decoding and NMS run outside it,
# so there is no `post_processing` here. A detector whose head returns
# other groups sets output_names (YOLOX adds objectnesses).
_base_ = ['../_base_/tensorrt_int8.py']

deploy_cfg = dict(
    onnx_config=dict(output_names=['cls_scores', 'bbox_preds']),
    backend_config=dict(model_inputs=[
        dict(input_shapes=dict(input=dict(
            min_shape=[1, 3, 320, 320],
            opt_shape=[1, 3, 800, 1344],
            max_shape=[1, 3, 1344, 1344])))
    ]),
    codebase_config=dict(type='mmdet', task='ObjectDetection'))
