# W8A8 post-training quantization of the fp32 MNIST MobileNetV2 for OpenVINO:
# per-channel symmetric int8 weights on [-127, 127], per-tensor unsigned
# symmetric activations (zero-point 0 after ReLU).
# Scheme: ../_base_/qconfigs/openvino_w8a8_minmax.py.
#   python tools/ptq.py configs/quantization/ptq/ptq_openvino_mobilenetv2_mnist.py
_base_ = [
    '../../fp32/mobilenetv2_mnist.py', '../_base_/qconfigs/openvino_w8a8_minmax.py',
    './_base_/calib32_ddp.py'
]

# Written by `make demo` (tools/demo.py); after your own fp32 training pass
# --cfg-options model.float_checkpoint=work_dirs/mobilenetv2_mnist/epoch_10.pth
float_checkpoint = 'work_dirs/fp32/mobilenetv2_mnist/float.pth'

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
        _base_.quantizer,
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
