# The backend-independent part of W8A8 PTQ of mmcls's ImageNet MobileNetV2:
# calibration on 32 batches of training images and the DDP wrapper; the model,
# and its checkpoint come from ../../../_base_/models/mbv2_in1k.py. A
# backend's config adds its deploy config and qconfig `_base_` and sets
# `model.deploy_cfg` and `model.quantizer`.
_base_ = ['../../../_base_/models/mbv2_in1k.py', '../calib32_ddp.py']

# Calibrate on training images (MMRazor used the validation set; we never
# do), seen through the deterministic test pipeline (resize + centre crop).
calibrate_dataloader = dict(
    batch_size=32,
    num_workers=5,
    dataset=dict(_base_.train_dataloader.dataset,
                 pipeline=_base_.test_pipeline),
    sampler=dict(type='DefaultSampler', shuffle=True))

test_cfg = dict(
    _delete_=True,
    calibrate_dataloader=calibrate_dataloader,
    **_base_.ptq_loop)
