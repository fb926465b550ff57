# A small YOLOX (CSPDarknet at 1/8 width + PAFPN + YOLOXHead) trained on the
# digit canvases, sized for 2 CPU cores.
#   python tools/train.py configs/detection/yolox_tiny_digits.py
# No mosaic/mixup and no mode-switch hook: the canvases are already varied
# and the run is short; the pipeline is the dataset base's.
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
    type='mmdet.YOLOX',
    data_preprocessor=_base_.data_preprocessor,
    # channels 16/32/64 at strides 8/16/32: 12x12, 6x6 and 3x3 on 96x96
    backbone=dict(
        type='mmdet.CSPDarknet', deepen_factor=0.33, widen_factor=0.125,
        out_indices=(2, 3, 4), use_depthwise=False,
        spp_kernal_sizes=(5, 9, 13),
        norm_cfg=dict(type='BN', momentum=0.03, eps=0.001),
        act_cfg=dict(type='Swish')),
    neck=dict(
        type='mmdet.YOLOXPAFPN', in_channels=[32, 64, 128], out_channels=32,
        num_csp_blocks=1, use_depthwise=False, upsample_cfg=dict(
            scale_factor=2, mode='nearest'),
        norm_cfg=dict(type='BN', momentum=0.03, eps=0.001),
        act_cfg=dict(type='Swish')),
    bbox_head=dict(
        type='mmdet.YOLOXHead', num_classes=10, in_channels=32,
        feat_channels=32, stacked_convs=2, strides=(8, 16, 32),
        use_depthwise=False,
        norm_cfg=dict(type='BN', momentum=0.03, eps=0.001),
        act_cfg=dict(type='Swish'),
        loss_cls=dict(type='CrossEntropyLoss', use_sigmoid=True,
                      reduction='sum', loss_weight=1.0),
        loss_bbox=dict(type='IoULoss', mode='square', eps=1e-16,
                       reduction='sum', loss_weight=5.0),
        loss_obj=dict(type='CrossEntropyLoss', use_sigmoid=True,
                      reduction='sum', loss_weight=1.0),
        loss_l1=dict(type='L1Loss', reduction='sum', loss_weight=1.0)),
    train_cfg=dict(assigner=dict(type='SimOTAAssigner', center_radius=2.5)),
    test_cfg=dict(score_thr=0.01, nms=dict(type='nms', iou_threshold=0.65),
                  max_per_img=20))

max_epochs = 16
train_cfg = dict(type='EpochBasedTrainLoop', max_epochs=max_epochs,
                 val_interval=max_epochs)
val_cfg = dict(type='ValLoop')
test_cfg = dict(type='TestLoop')
optim_wrapper = dict(
    optimizer=dict(type='AdamW', lr=2e-3, weight_decay=5e-4),
    paramwise_cfg=dict(norm_decay_mult=0., bias_decay_mult=0.),
    clip_grad=dict(max_norm=10.))
param_scheduler = [
    dict(type='LinearLR', start_factor=0.1, by_epoch=False, begin=0,
         end=50),
    dict(type='CosineAnnealingLR', T_max=max_epochs, by_epoch=True),
]
default_hooks = dict(logger=dict(interval=10))
