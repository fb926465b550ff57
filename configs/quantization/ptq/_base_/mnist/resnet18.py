# The backend-independent part of W8A8 PTQ of the fp32 MNIST ResNet-18: the
# float model and checkpoint, calibration on 32 batches of training digits,
# and a tracer that keeps ClsHead's loss and predictions out of the graph. A
# backend's config adds its qconfig `_base_` and sets `model.quantizer`.
_base_ = ['../../../../fp32/resnet18_mnist.py', '../calib32_ddp.py']

# Written by `make demo` (tools/demo.py); after your own fp32 training pass
# --cfg-options model.float_checkpoint=work_dirs/resnet18_mnist/epoch_6.pth
float_checkpoint = 'work_dirs/fp32/resnet18_mnist/float.pth'

# Calibrate on training digits (never the test set), with the deterministic
# test pipeline: the inputs the deployed model sees, without random crops.
calibrate_dataloader = dict(
    batch_size=64,
    num_workers=0,
    dataset=dict(
        type=_base_.dataset_type, split='train',
        pipeline=_base_.test_pipeline),
    sampler=dict(type='DefaultSampler', shuffle=True))

model = dict(
    _delete_=True,
    type='mmrazor_quant.MMArchitectureQuant',
    data_preprocessor=dict(
        type='mmcls.ClsDataPreprocessor', **_base_.data_preprocessor),
    architecture=_base_.model,
    float_checkpoint=float_checkpoint,
    quantizer=dict(
        tracer=dict(
            type='mmrazor_quant.CustomTracer',
            skipped_methods=[
                'mmcls.models.heads.ClsHead._get_loss',
                'mmcls.models.heads.ClsHead._get_predictions'
            ])))

test_cfg = dict(
    _delete_=True,
    calibrate_dataloader=calibrate_dataloader,
    **_base_.ptq_loop)
