# The backend-independent part of W8A8 PTQ of the fp32 MNIST ResNet-18:
# calibration on 32 batches of training digits and the DDP wrapper; the model,
# its checkpoint and tracer come from ../../../_base_/models/resnet18_mnist.py.
# A backend's config adds its qconfig `_base_` and sets `model.quantizer`.
_base_ = ['../../../_base_/models/resnet18_mnist.py', '../calib32_ddp.py']

# Calibrate on training digits (never the test set), with the deterministic
# test pipeline: the inputs the deployed model sees, without random crops.
calibrate_dataloader = dict(
    batch_size=64,
    num_workers=0,
    dataset=dict(
        type=_base_.dataset_type, split='train',
        pipeline=_base_.test_pipeline),
    sampler=dict(type='DefaultSampler', shuffle=True))

test_cfg = dict(
    _delete_=True,
    calibrate_dataloader=calibrate_dataloader,
    **_base_.ptq_loop)
