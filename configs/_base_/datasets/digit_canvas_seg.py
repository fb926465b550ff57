# Digit segmentation: 2-4 real MNIST5k digits on 64x64 canvases, each stroke
# pixel labelled with its digit + 1, background 0 (11 classes; see
# mmrazor_quant/datasets/seg_digits.py); 2,000 train / 400 val canvases,
# written to data_root on first use. Evaluated with mmseg's IoUMetric.
dataset_type = 'mmrazor_quant.DigitCanvasSegDataset'
data_root = 'data/digit_canvas_seg/'
crop_size = (64, 64)

# No flips: digits are not mirror-symmetric. The test Resize is the size
# the canvases have; it also tells the quantizer the size to trace at.
train_pipeline = [
    dict(type='LoadImageFromFile'),
    dict(type='LoadAnnotations'),
    dict(type='PackSegInputs'),
]
test_pipeline = [
    dict(type='LoadImageFromFile'),
    dict(type='Resize', scale=crop_size, keep_ratio=False),
    dict(type='LoadAnnotations'),
    dict(type='PackSegInputs'),
]

train_dataloader = dict(
    batch_size=16,
    num_workers=0,
    sampler=dict(type='DefaultSampler', shuffle=True),
    dataset=dict(type=dataset_type, data_root=data_root, split='train',
                 pipeline=train_pipeline))
val_dataloader = dict(
    batch_size=16,
    num_workers=0,
    sampler=dict(type='DefaultSampler', shuffle=False),
    dataset=dict(type=dataset_type, data_root=data_root, split='val',
                 test_mode=True, pipeline=test_pipeline))
test_dataloader = val_dataloader

val_evaluator = dict(type='IoUMetric', iou_metrics=['mIoU'])
test_evaluator = val_evaluator

# PTQ calibration: training canvases through the deterministic test pipeline.
calibrate_dataloader = dict(
    batch_size=16,
    num_workers=0,
    sampler=dict(type='DefaultSampler', shuffle=True),
    dataset=dict(type=dataset_type, data_root=data_root, split='train',
                 pipeline=test_pipeline))
