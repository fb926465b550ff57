# W8A8 post-training quantization of a narrow MNIST ResNet-18 with TQT
# (power-of-two scales from a learnable log2 threshold), whose observer and
# fake quant live in examples/custom_algorithm/tqt (user code). Run from the
# repository root:
#   PYTHONPATH=examples/custom_algorithm python tools/ptq.py \
#       examples/custom_algorithm/configs/ptq_tqt_resnet18_mnist.py
_base_ = ['../../../configs/fp32/resnet18_mnist.py']

# Importing the package registers PowerOfTwoMaxObserver and TQTFakeQuantize.
custom_imports = dict(imports=['tqt'], allow_failed_imports=False)

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

# Registered names from the tqt package, used like the built-in ones.
global_qconfig = dict(
    w_observer=dict(type='PowerOfTwoMaxObserver'),
    a_observer=dict(type='PowerOfTwoMaxObserver'),
    w_fake_quant=dict(type='TQTFakeQuantize'),
    a_fake_quant=dict(type='TQTFakeQuantize'),
    w_qscheme=dict(qdtype='qint8', bit=8, is_symmetry=True),
    a_qscheme=dict(qdtype='quint8', bit=8, is_symmetry=True),
)

model = dict(
    _delete_=True,
    type='mmrazor_quant.MMArchitectureQuant',
    data_preprocessor=dict(
        type='mmcls.ClsDataPreprocessor', **_base_.data_preprocessor),
    architecture=architecture,
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

test_cfg = dict(
    _delete_=True,
    type='mmrazor_quant.PTQLoop',
    calibrate_dataloader=calibrate_dataloader,
    calibrate_steps=8)
