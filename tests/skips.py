"""The methods ``CustomTracer`` leaves out of the graph for the OpenMMLab
heads the tests trace (their loss and post-processing)."""

# mmcls: the classification head's loss and prediction post-processing.
CLS_HEAD_SKIPS = [
    'mmcls.models.heads.ClsHead._get_loss',
    'mmcls.models.heads.ClsHead._get_predictions'
]

# mmdet, per detector type: the dense head's loss and box decoding.
DET_HEAD_SKIPS = {
    'RetinaNet': [
        'mmdet.models.dense_heads.base_dense_head.BaseDenseHead'
        '.predict_by_feat',
        'mmdet.models.dense_heads.anchor_head.AnchorHead.loss_by_feat',
    ],
    'YOLOX': [
        'mmdet.models.dense_heads.yolox_head.YOLOXHead.predict_by_feat',
        'mmdet.models.dense_heads.yolox_head.YOLOXHead.loss_by_feat',
    ],
}
