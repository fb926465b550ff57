# W8A8 post-training quantization of the fp32 MNIST ResNet-18 in the papers'
# setting: fake quants on the inputs and weights of conv/linear only,
# affine (asymmetric) int8 for both, weights per-channel.
#   python tools/ptq.py configs/quantization/ptq/ptq_academic_resnet18_mnist.py
_base_ = ['../../fp32/resnet18_mnist.py']

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

global_qconfig = dict(
    w_observer=dict(type='mmrazor_quant.PerChannelMinMaxObserver'),
    a_observer=dict(type='mmrazor_quant.MinMaxObserver'),
    w_fake_quant=dict(type='mmrazor_quant.FakeQuantize'),
    a_fake_quant=dict(type='mmrazor_quant.FakeQuantize'),
    w_qscheme=dict(qdtype='qint8', bit=8, is_symmetry=False),
    a_qscheme=dict(qdtype='quint8', bit=8, is_symmetry=False),
)

model = dict(
    _delete_=True,
    type='mmrazor_quant.MMArchitectureQuant',
    data_preprocessor=dict(
        type='mmcls.ClsDataPreprocessor', **_base_.data_preprocessor),
    architecture=_base_.model,
    float_checkpoint=float_checkpoint,
    quantizer=dict(
        type='mmrazor_quant.AcademicQuantizer',
        global_qconfig=global_qconfig,
        tracer=dict(
            type='mmrazor_quant.CustomTracer',
            skipped_methods=[
                'mmcls.models.heads.ClsHead._get_loss',
                'mmcls.models.heads.ClsHead._get_predictions'
            ])))

model_wrapper_cfg = dict(
    type='mmrazor_quant.MMArchitectureQuantDDP',
    broadcast_buffers=False,
    find_unused_parameters=True)

test_cfg = dict(
    _delete_=True,
    type='mmrazor_quant.PTQLoop',
    calibrate_dataloader=calibrate_dataloader,
    calibrate_steps=32)
