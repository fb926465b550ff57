# RTMDet-tiny (mmyolo's config: CSPNeXt + CSPNeXtPAFPN + RTMDetSepBNHead,
# whose convs are shared across the FPN levels with a BN per level) trained
# on the 96x96 digit canvases, sized for 2 CPU cores.
#   python tools/train.py configs/yolo/rtmdet_tiny_digits.py
# The model is mmyolo's; what changes is the data (the project's digit
# canvases through mmdet's plain pipeline and DetDataPreprocessor, no
# mosaic/mixup and no pipeline switch), no ImageNet checkpoint, and a short
# schedule instead of 300 epochs.
_base_ = ['mmyolo::rtmdet/rtmdet_tiny_syncbn_fast_8xb32-300e_coco.py']

custom_imports = dict(
    imports=['mmyolo.models', 'mmdet.models', 'mmdet.datasets',
             'mmdet.evaluation', 'mmrazor_quant.datasets'],
    allow_failed_imports=False)

num_classes = 10
img_scale = (96, 96)  # width, height
data_root = 'data/digit_canvas/'
dataset_type = 'mmrazor_quant.DigitCanvasCocoDataset'

model = dict(
    data_preprocessor=dict(
        _delete_=True, type='mmdet.DetDataPreprocessor', mean=[0., 0., 0.],
        std=[255., 255., 255.], bgr_to_rgb=False, pad_size_divisor=32),
    backbone=dict(init_cfg=None),
    bbox_head=dict(head_module=dict(num_classes=num_classes)),
    train_cfg=dict(assigner=dict(num_classes=num_classes)),
    test_cfg=dict(nms_pre=1000, score_thr=0.001, max_per_img=100))

meta_keys = ('img_id', 'img_path', 'ori_shape', 'img_shape', 'scale_factor')
pipeline = [
    dict(type='mmcv.LoadImageFromFile'),
    dict(type='mmdet.LoadAnnotations', with_bbox=True),
    dict(type='mmdet.Resize', scale=img_scale, keep_ratio=True),
    dict(type='mmdet.PackDetInputs', meta_keys=meta_keys),
]
train_pipeline = pipeline
test_pipeline = pipeline
train_dataloader = dict(
    _delete_=True,
    batch_size=16,
    num_workers=0,
    dataset=dict(type=dataset_type, data_root=data_root, split='train',
                 filter_cfg=dict(filter_empty_gt=True), pipeline=pipeline),
    sampler=dict(type='DefaultSampler', shuffle=True))
val_dataloader = dict(
    _delete_=True,
    batch_size=16,
    num_workers=0,
    dataset=dict(type=dataset_type, data_root=data_root, split='val',
                 test_mode=True, pipeline=pipeline),
    sampler=dict(type='DefaultSampler', shuffle=False))
test_dataloader = val_dataloader
val_evaluator = dict(ann_file=data_root + 'annotations/val.json')
test_evaluator = val_evaluator

max_epochs = 12
train_cfg = dict(
    _delete_=True, type='EpochBasedTrainLoop', max_epochs=max_epochs,
    val_interval=max_epochs)
optim_wrapper = dict(optimizer=dict(lr=3e-3, weight_decay=5e-4))
param_scheduler = [
    dict(type='LinearLR', start_factor=0.1, by_epoch=False, begin=0,
         end=50),
    dict(type='CosineAnnealingLR', T_max=max_epochs, by_epoch=True),
]
default_hooks = dict(
    checkpoint=dict(interval=max_epochs, max_keep_ckpts=1),
    logger=dict(interval=10))
custom_hooks = []
