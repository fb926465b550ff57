# SimpleBaseline (ResNet + three deconvolutions + heatmap head) from mmpose's
# own COCO ResNet-50 config, on ResNet-18 and retargeted to the keypoint
# digits: 64x64 input, 16x16 heatmaps of 5 keypoints, no pretrained weights;
# sized for 2 CPU cores.
#   python tools/train.py configs/pose/simplebaseline_r18_digits.py
_base_ = [
    'mmpose::body_2d_keypoint/topdown_heatmap/coco/td-hm_res50_8xb64-210e_coco-256x192.py',  # noqa
    '../_base_/datasets/pose_digits.py',
]
custom_imports = dict(
    imports=['mmpose.models', 'mmpose.datasets', 'mmpose.evaluation',
             'mmrazor_quant.datasets'],
    allow_failed_imports=False)

# Heatmaps at a quarter of the input; sigma in heatmap pixels.
codec = dict(type='MSRAHeatmap', input_size=_base_.pose_input_size,
             heatmap_size=(16, 16), sigma=1.5)

model = dict(
    data_preprocessor=_base_.pose_data_preprocessor,
    backbone=dict(depth=18, init_cfg=None),
    head=dict(in_channels=512, out_channels=5,
              deconv_out_channels=(128, 128, 128), decoder=codec),
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

# ResNet-18 costs about three times RTMPose-t's compute per image here:
# 6 epochs instead of 30 (2 CPU cores).
max_epochs = 6
train_cfg = dict(max_epochs=max_epochs, val_interval=max_epochs)
optim_wrapper = dict(optimizer=dict(lr=2e-3))
param_scheduler = [
    _base_.pose_param_scheduler[0],
    dict(_base_.pose_param_scheduler[1], T_max=max_epochs),
]
auto_scale_lr = dict(enable=False)
custom_hooks = []
default_hooks = dict(
    _base_.pose_default_hooks,
    checkpoint=dict(_base_.pose_default_hooks.checkpoint,
                    interval=max_epochs))
# A fixed seed: the same fp32 model from one training to the next (the
# demo tables are measured on it).
randomness = dict(seed=0, deterministic=False)
