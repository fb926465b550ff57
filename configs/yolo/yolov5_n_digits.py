# YOLOv5-n (mmyolo's v6.1 config: CSPDarknet + PAFPN + YOLOv5Head with
# objectness) trained on the 96x96 digit canvases, sized for 2 CPU cores.
#   python tools/train.py configs/yolo/yolov5_n_base_.digits.py
# The model is mmyolo's; what changes is the data (the project's digit
# canvases through mmdet's plain pipeline and DetDataPreprocessor, no mosaic:
# the canvases are already varied), anchors sized for 10-32 px digits, and
# a short AdamW schedule instead of 300 epochs of SGD.
_base_ = [
    'mmyolo::yolov5/yolov5_n-v61_syncbn_fast_8xb16-300e_coco.py',
    '../_base_/datasets/digit_canvas_yolo.py'
]

custom_imports = dict(
    imports=['mmyolo.models', 'mmdet.models', 'mmdet.datasets',
             'mmdet.evaluation', 'mmrazor_quant.datasets'],
    allow_failed_imports=False)

num_classes = 10
img_scale = (96, 96)  # width, height
# (w, h) per level for strides 8 / 16 / 32 on 96x96 canvases
anchors = [[(6, 12), (10, 18), (14, 22)], [(16, 26), (20, 30), (26, 32)],
           [(32, 40), (48, 56), (64, 80)]]

model = dict(
    data_preprocessor=dict(_delete_=True,
                           **_base_.digits.data_preprocessor),
    backbone=dict(init_cfg=None),
    bbox_head=dict(
        head_module=dict(num_classes=num_classes),
        prior_generator=dict(base_sizes=anchors),
        loss_cls=dict(loss_weight=0.5 * num_classes / 80),
        # YOLOv5 scales the objectness loss with the image area
        loss_obj=dict(loss_weight=(img_scale[0] / 640)**2)),
    test_cfg=dict(nms_pre=1000, score_thr=0.001, max_per_img=100))

train_pipeline = _base_.digits.pipeline
test_pipeline = _base_.digits.pipeline
train_dataloader = dict(_delete_=True, **_base_.digits.train_dataloader)
val_dataloader = dict(_delete_=True, **_base_.digits.val_dataloader)
test_dataloader = val_dataloader
val_evaluator = dict(ann_file=_base_.digits.ann_file)
test_evaluator = val_evaluator

max_epochs = 15
train_cfg = dict(max_epochs=max_epochs, val_interval=max_epochs)
optim_wrapper = dict(
    _delete_=True,
    optimizer=dict(type='AdamW', lr=4e-3, weight_decay=5e-4),
    paramwise_cfg=dict(norm_decay_mult=0., bias_decay_mult=0.),
    clip_grad=dict(max_norm=10.))
param_scheduler = [
    dict(type='LinearLR', start_factor=0.1, by_epoch=False, begin=0,
         end=25),
    dict(type='CosineAnnealingLR', T_max=max_epochs, by_epoch=True),
]
default_hooks = dict(
    param_scheduler=dict(_delete_=True, type='ParamSchedulerHook'),
    checkpoint=dict(interval=1, save_best=None, max_keep_ckpts=1),
    logger=dict(interval=10),
    visualization=dict(_delete_=True, type='mmdet.DetVisualizationHook'))
custom_hooks = []
# A fixed seed: the same fp32 model from one training to the next (the
# demo tables are measured on it).
randomness = dict(seed=0, deterministic=False)
