# The digit canvases (configs/_base_/datasets/digit_canvas_coco.py) for
# configs built on mmyolo's: all under one key, `digits`, since mmyolo's
# configs define every data key and bases may not share keys. A config
# takes them over with `_delete_=True` (configs/yolo/*_digits.py).
_data_root = 'data/digit_canvas/'
_dataset = dict(type='mmrazor_quant.DigitCanvasCocoDataset',
                data_root=_data_root)
# No flips: digits are not mirror-symmetric. The canvases are 96x96:
# Resize records scale_factor 1 for mmdet.
_pipeline = [
    dict(type='mmcv.LoadImageFromFile'),
    dict(type='mmdet.LoadAnnotations', with_bbox=True),
    dict(type='mmdet.Resize', scale=(96, 96), keep_ratio=True),
    dict(type='mmdet.PackDetInputs',
         meta_keys=('img_id', 'img_path', 'ori_shape', 'img_shape',
                    'scale_factor')),
]
digits = dict(
    # mmdet's preprocessor (a list of DetDataSample), not mmyolo's packed
    # batch: canvases are grey, the model sees 0..1.
    data_preprocessor=dict(
        type='mmdet.DetDataPreprocessor', mean=[0., 0., 0.],
        std=[255., 255., 255.], bgr_to_rgb=False, pad_size_divisor=32),
    pipeline=_pipeline,
    train_dataloader=dict(
        batch_size=32,
        num_workers=0,
        dataset=dict(_dataset, split='train',
                     filter_cfg=dict(filter_empty_gt=True),
                     pipeline=_pipeline),
        sampler=dict(type='DefaultSampler', shuffle=True)),
    val_dataloader=dict(
        batch_size=16,
        num_workers=0,
        dataset=dict(_dataset, split='val', test_mode=True,
                     pipeline=_pipeline),
        sampler=dict(type='DefaultSampler', shuffle=False)),
    ann_file=_data_root + 'annotations/val.json')

# PTQ calibration (configs/quantization/ptq/yolo/): training canvases, 16 a
# batch, through the deterministic pipeline evaluation uses.
calibrate_dataloader = dict(digits['train_dataloader'], batch_size=16)
