# Keypoint digits: one real MNIST5k digit per 28x28 image, five keypoints
# read off its pixels (top, bottom, left, right, center; docs/pose.md),
# COCO keypoint format, 2,000 train / 500 val images
# (mmrazor_quant/datasets/pose_digits.py), written to pose_data_root on first
# use. Keys are prefixed `pose_` so that a model config can take this file
# next to an mmpose config as a second base (bases may not share keys).
pose_data_root = 'data/pose_digits/'
pose_dataset_type = 'mmrazor_quant.PoseDigitsDataset'

# Digits are grey: the model sees 0..1 in 3 identical channels.
pose_data_preprocessor = dict(
    type='PoseDataPreprocessor',
    mean=[0., 0., 0.],
    std=[255., 255., 255.],
    bgr_to_rgb=False)

# Shift and scale only: a rotation or a flip changes which pixel is the
# extreme one, so the keypoints would no longer follow their definition.
pose_train_augment = dict(
    type='RandomBBoxTransform',
    shift_factor=0.1,
    scale_factor=[0.8, 1.2],
    rotate_prob=0.)

pose_train_dataset = dict(
    type=pose_dataset_type, data_root=pose_data_root, split='train',
    data_mode='topdown')
pose_val_dataset = dict(
    type=pose_dataset_type, data_root=pose_data_root, split='val',
    data_mode='topdown', test_mode=True)

# mmpose's evaluators with the set's sigmas (from the dataset's metainfo):
# COCO keypoint AP (xtcocotools' OKS), and PCK at 0.1 of the box side.
pose_evaluator = [
    dict(type='CocoMetric',
         ann_file=pose_data_root + 'annotations/val.json'),
    dict(type='PCKAccuracy', thr=0.1),
]

# The models' shared input size, loading and schedule (each model adds its
# codec's GenerateTarget to the train pipeline and sets its learning rate).
pose_input_size = (64, 64)
pose_train_pipeline = [
    dict(type='LoadImage'),
    dict(type='GetBBoxCenterScale'),
    pose_train_augment,
    dict(type='TopdownAffine', input_size=pose_input_size),
]
pose_val_pipeline = [
    dict(type='LoadImage'),
    dict(type='GetBBoxCenterScale'),
    dict(type='TopdownAffine', input_size=pose_input_size),
    dict(type='PackPoseInputs'),
]
pose_train_dataloader = dict(
    _delete_=True, batch_size=128, num_workers=0,
    sampler=dict(type='DefaultSampler', shuffle=True),
    dataset=pose_train_dataset)
pose_val_dataloader = dict(
    _delete_=True, batch_size=50, num_workers=0, drop_last=False,
    sampler=dict(type='DefaultSampler', shuffle=False, round_up=False),
    dataset=dict(pose_val_dataset, pipeline=pose_val_pipeline))
# PTQ calibration (configs/quantization/ptq/pose/): training digits through
# the deterministic validation pipeline.
calibrate_dataloader = dict(
    batch_size=32, num_workers=0,
    sampler=dict(type='DefaultSampler', shuffle=True),
    dataset=dict(pose_train_dataset, pipeline=pose_val_pipeline))

pose_max_epochs = 30
pose_train_cfg = dict(max_epochs=pose_max_epochs,
                      val_interval=pose_max_epochs)
pose_param_scheduler = [
    dict(type='LinearLR', start_factor=0.01, by_epoch=False, begin=0,
         end=50),
    dict(type='CosineAnnealingLR', eta_min_ratio=0.01,
         T_max=pose_max_epochs, by_epoch=True, convert_to_iter_based=True),
]
# One process: no second-stage pipeline switch, no buffer sync.
pose_default_hooks = dict(
    logger=dict(interval=20),
    checkpoint=dict(interval=pose_max_epochs, save_best=None,
                    max_keep_ckpts=1))
