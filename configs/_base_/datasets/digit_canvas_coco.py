# Digit canvases: 2-4 real MNIST5k digits on 96x96 canvases, COCO format,
# 800 train / 200 val images (mmrazor_quant/datasets/digit_canvas.py),
# written to data_root on first use.
dataset_type = 'mmrazor_quant.DigitCanvasCocoDataset'
data_root = 'data/digit_canvas/'

# mmcv's image loading; mmdet's box loading and packing.
# Canvases are grey; the model sees 0..1 with 3 identical channels.
data_preprocessor = dict(
    type='mmdet.DetDataPreprocessor',
    mean=[0., 0., 0.],
    std=[255., 255., 255.],
    bgr_to_rgb=False,
    pad_size_divisor=32)

# No flips: digits are not mirror-symmetric.
meta_keys = ('img_id', 'img_path', 'ori_shape', 'img_shape', 'scale_factor')
train_pipeline = [
    dict(type='mmcv.LoadImageFromFile'),
    dict(type='mmdet.LoadAnnotations', with_bbox=True),
    # canvases are 96x96 already: records scale_factor 1 for mmdet
    dict(type='mmdet.Resize', scale=(96, 96), keep_ratio=True),
    dict(type='mmdet.PackDetInputs', meta_keys=meta_keys),
]
test_pipeline = [
    dict(type='mmcv.LoadImageFromFile'),
    dict(type='mmdet.LoadAnnotations', with_bbox=True),
    dict(type='mmdet.Resize', scale=(96, 96), keep_ratio=True),
    dict(type='mmdet.PackDetInputs', meta_keys=meta_keys),
]

train_dataloader = dict(
    batch_size=16,
    num_workers=0,
    dataset=dict(type=dataset_type, data_root=data_root, split='train',
                 filter_cfg=dict(filter_empty_gt=True),
                 pipeline=train_pipeline),
    sampler=dict(type='DefaultSampler', shuffle=True),
    batch_sampler=dict(type='mmdet.AspectRatioBatchSampler'))
val_dataloader = dict(
    batch_size=16,
    num_workers=0,
    dataset=dict(type=dataset_type, data_root=data_root, split='val',
                 test_mode=True, pipeline=test_pipeline),
    sampler=dict(type='DefaultSampler', shuffle=False))
test_dataloader = val_dataloader

val_evaluator = dict(
    type='mmdet.CocoMetric',
    ann_file=data_root + 'annotations/val.json',
    metric='bbox')
test_evaluator = val_evaluator

# PTQ calibration (configs/quantization/ptq/detection/): training canvases
# through the deterministic test pipeline, without the aspect-ratio batching.
calibrate_dataloader = dict(
    batch_size=16,
    num_workers=0,
    dataset=dict(train_dataloader['dataset'], pipeline=test_pipeline),
    sampler=dict(type='DefaultSampler', shuffle=True))
