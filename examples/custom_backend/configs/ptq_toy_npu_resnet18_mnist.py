# W8A8 post-training quantization of a narrow MNIST ResNet-18 for the toy NPU
# backend defined in examples/custom_backend/toy_npu (user code, not the
# library). Run from the repository root:
#   PYTHONPATH=examples/custom_backend python tools/ptq.py \
#       examples/custom_backend/configs/ptq_toy_npu_resnet18_mnist.py
# Set bit=4 in both qschemes for W4A4 on the same backend.
_base_ = ['../../../configs/fp32/resnet18_mnist.py']

# Importing the package registers ToyNPUQuantizer, its exporter and the
# 'toy_npu' backend that binds them.
custom_imports = dict(imports=['toy_npu'], allow_failed_imports=False)

# A narrow ResNet-18 (8 channels at the stem) keeps the example fast.
architecture = dict(
    _scope_='mmcls',
    type='ImageClassifier',
    backbone=dict(
        type='ResNet_CIFAR', depth=18, in_channels=1, stem_channels=8,
        base_channels=8),
    neck=dict(type='GlobalAveragePooling'),
    head=dict(
        type='LinearClsHead', num_classes=10, in_channels=64,
        loss=dict(type='CrossEntropyLoss', loss_weight=1.0)))
float_checkpoint = 'work_dirs/fp32/resnet18_mnist_narrow/float.pth'

calibrate_dataloader = dict(
    batch_size=64,
    num_workers=0,
    dataset=dict(
        type=_base_.dataset_type, split='train',
        pipeline=_base_.test_pipeline),
    sampler=dict(type='DefaultSampler', shuffle=True))

# Precision is chosen here; the backend declares what it can execute
# (bits 4 or 8, signed symmetric narrow range, per-channel weights).
bit = 8
global_qconfig = dict(
    w_observer=dict(type='mmrazor_quant.PerChannelMinMaxObserver'),
    a_observer=dict(type='mmrazor_quant.MinMaxObserver'),
    w_fake_quant=dict(type='mmrazor_quant.FakeQuantize'),
    a_fake_quant=dict(type='mmrazor_quant.FakeQuantize'),
    w_qscheme=dict(
        qdtype='qint8', bit=bit, is_symmetry=True, is_symmetric_range=True),
    a_qscheme=dict(
        qdtype='qint8', bit=bit, is_symmetry=True, is_symmetric_range=True),
)

# mmdeploy's deployment description, as MMRazor's configs carry it: the
# backend is ours, the rest is read as for the built-in ones.
deploy_cfg = dict(
    onnx_config=dict(
        type='onnx', opset_version=13, save_file='toy_npu.onnx',
        input_names=['input'], output_names=['output'], input_shape=None,
        dynamic_axes={'input': {0: 'batch'}, 'output': {0: 'batch'}}),
    backend_config=dict(type='toy_npu'),
    codebase_config=dict(type='mmcls', task='Classification'))

model = dict(
    _delete_=True,
    type='mmrazor_quant.MMArchitectureQuant',
    data_preprocessor=dict(
        type='mmcls.ClsDataPreprocessor', **_base_.data_preprocessor),
    architecture=architecture,
    float_checkpoint=float_checkpoint,
    deploy_cfg=deploy_cfg,
    quantizer=dict(
        type='ToyNPUQuantizer',  # registered by toy_npu, used by name
        global_qconfig=global_qconfig,
        tracer=dict(
            type='mmrazor_quant.CustomTracer',
            skipped_methods=[
                'mmcls.models.heads.ClsHead._get_loss',
                'mmcls.models.heads.ClsHead._get_predictions'
            ])))

test_cfg = dict(
    _delete_=True,
    type='mmrazor_quant.PTQLoop',
    calibrate_dataloader=calibrate_dataloader,
    calibrate_steps=8)
