# A small RetinaNet (ResNet-18 at 1/4 width + FPN + RetinaHead) trained on
# the digit canvases, sized for 2 CPU cores.
#   python tools/train.py configs/detection/retinanet_tiny_digits.py
_base_ = [
    '../_base_/datasets/digit_canvas_coco.py',
    '../_base_/default_runtime.py',
]
default_scope = 'mmdet'
custom_imports = dict(
    imports=['mmcv.transforms', 'mmdet.models', 'mmdet.datasets',
             'mmdet.evaluation',
             'mmrazor_quant.datasets'],
    allow_failed_imports=False)

model = dict(
    type='mmdet.RetinaNet',
    data_preprocessor=_base_.data_preprocessor,
    backbone=dict(
        type='mmdet.ResNet', depth=18, base_channels=16, num_stages=4,
        out_indices=(1, 2, 3), norm_cfg=dict(type='BN'), init_cfg=None),
    neck=dict(type='mmdet.FPN', in_channels=[32, 64, 128], out_channels=32,
              start_level=0, num_outs=3),
    bbox_head=dict(
        type='mmdet.RetinaHead',
        num_classes=10,
        in_channels=32,
        stacked_convs=2,
        feat_channels=32,
        # digits are 15-32 pixels: anchors of 16 and 32 at strides 8 and 16
        anchor_generator=dict(
            type='AnchorGenerator', octave_base_scale=2,
            scales_per_octave=2, ratios=[0.75, 1.0], strides=[8, 16, 32]),
        bbox_coder=dict(type='DeltaXYWHBBoxCoder', target_means=[.0] * 4,
                        target_stds=[0.1, 0.1, 0.2, 0.2]),
        loss_cls=dict(type='FocalLoss', use_sigmoid=True, gamma=2.0,
                      alpha=0.25, loss_weight=1.0),
        loss_bbox=dict(type='L1Loss', loss_weight=1.0)),
    train_cfg=dict(
        assigner=dict(type='MaxIoUAssigner', pos_iou_thr=0.5,
                      neg_iou_thr=0.4, min_pos_iou=0, ignore_iof_thr=-1),
        sampler=dict(type='PseudoSampler'), allowed_border=-1,
        pos_weight=-1, debug=False),
    test_cfg=dict(nms_pre=300, min_bbox_size=0, score_thr=0.05,
                  nms=dict(type='nms', iou_threshold=0.5), max_per_img=20))

train_cfg = dict(type='EpochBasedTrainLoop', max_epochs=24, val_interval=24)
val_cfg = dict(type='ValLoop')
test_cfg = dict(type='TestLoop')
optim_wrapper = dict(
    optimizer=dict(type='AdamW', lr=2e-3, weight_decay=1e-4),
    clip_grad=dict(max_norm=10.))
param_scheduler = [dict(type='CosineAnnealingLR', T_max=24, by_epoch=True)]
default_hooks = dict(logger=dict(interval=10))
