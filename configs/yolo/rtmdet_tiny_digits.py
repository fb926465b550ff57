# RTMDet-tiny (mmyolo's config: CSPNeXt + CSPNeXtPAFPN + RTMDetSepBNHead,
# whose convs are shared across the FPN levels with a BN per level) trained
# on the 96x96 digit canvases, sized for 2 CPU cores.
#   python tools/train.py configs/yolo/rtmdet_tiny_digits.py
# The model is mmyolo's; what changes is the data (the project's digit
# canvases through mmdet's plain pipeline and DetDataPreprocessor, no
# mosaic/mixup and no pipeline switch), no ImageNet checkpoint, and a short
# schedule instead of 300 epochs.
_base_ = [
    'mmyolo::rtmdet/rtmdet_tiny_syncbn_fast_8xb32-300e_coco.py',
    '../_base_/datasets/digit_canvas_yolo.py'
]

custom_imports = dict(
    imports=['mmyolo.models', 'mmdet.models', 'mmdet.datasets',
             'mmdet.evaluation', 'mmrazor_quant.datasets'],
    allow_failed_imports=False)

num_classes = 10
img_scale = (96, 96)  # width, height

model = dict(
    data_preprocessor=dict(_delete_=True,
                           **_base_.digits.data_preprocessor),
    backbone=dict(init_cfg=None),
    bbox_head=dict(head_module=dict(num_classes=num_classes)),
    train_cfg=dict(assigner=dict(num_classes=num_classes)),
    test_cfg=dict(nms_pre=1000, score_thr=0.001, max_per_img=100))

train_pipeline = _base_.digits.pipeline
test_pipeline = _base_.digits.pipeline
train_dataloader = dict(_delete_=True, **_base_.digits.train_dataloader)
val_dataloader = dict(_delete_=True, **_base_.digits.val_dataloader)
test_dataloader = val_dataloader
val_evaluator = dict(ann_file=_base_.digits.ann_file)
test_evaluator = val_evaluator

max_epochs = 15
train_cfg = dict(
    _delete_=True, type='EpochBasedTrainLoop', max_epochs=max_epochs,
    val_interval=max_epochs)
optim_wrapper = dict(optimizer=dict(lr=4e-3, weight_decay=5e-4))
param_scheduler = [
    dict(type='LinearLR', start_factor=0.1, by_epoch=False, begin=0,
         end=25),
    dict(type='CosineAnnealingLR', T_max=max_epochs, by_epoch=True),
]
default_hooks = dict(
    checkpoint=dict(interval=1, max_keep_ckpts=1),
    logger=dict(interval=10))
custom_hooks = []
# A fixed seed: the same fp32 model from one training to the next (the
# demo tables are measured on it).
randomness = dict(seed=0, deterministic=False)
