# RTMPose-t (CSPNeXt-t + RTMCC SimCC head) from mmpose's own COCO config,
# retargeted to the keypoint digits: 64x64 input, 5 keypoints, BN instead of
# SyncBN, no pretrained weights; sized for 2 CPU cores.
#   python tools/train.py configs/pose/rtmpose_t_digits.py
_base_ = [
    'mmpose::body_2d_keypoint/rtmpose/coco/rtmpose-t_8xb256-420e_coco-256x192.py',  # noqa
    '../_base_/datasets/pose_digits.py',
]
custom_imports = dict(
    imports=['mmpose.models', 'mmpose.datasets', 'mmpose.evaluation',
             'mmrazor_quant.datasets'],
    allow_failed_imports=False)

# The SimCC head flattens a fixed 2x2 feature map (64 / 32): its input size
# is part of the model. 2 bins per pixel; sigma in SimCC bins.
codec = dict(type='SimCCLabel', input_size=_base_.pose_input_size,
             sigma=(1.5, 1.5), simcc_split_ratio=2.0, normalize=False,
             use_dark=False)

model = dict(
    data_preprocessor=_base_.pose_data_preprocessor,
    backbone=dict(norm_cfg=dict(type='BN'), init_cfg=None),
    head=dict(out_channels=5, input_size=codec['input_size'],
              in_featuremap_size=(2, 2), decoder=codec),
    test_cfg=dict(flip_test=False))

train_pipeline = _base_.pose_train_pipeline + [
    dict(type='GenerateTarget', encoder=codec),
    dict(type='PackPoseInputs'),
]
val_pipeline = _base_.pose_val_pipeline
test_pipeline = val_pipeline
train_dataloader = dict(
    _base_.pose_train_dataloader,
    dataset=dict(_base_.pose_train_dataset, pipeline=train_pipeline))
val_dataloader = _base_.pose_val_dataloader
test_dataloader = val_dataloader
val_evaluator = _base_.pose_evaluator
test_evaluator = val_evaluator

train_cfg = _base_.pose_train_cfg
optim_wrapper = dict(optimizer=dict(lr=4e-3))
param_scheduler = _base_.pose_param_scheduler
auto_scale_lr = dict(enable=False)
custom_hooks = []
default_hooks = _base_.pose_default_hooks
