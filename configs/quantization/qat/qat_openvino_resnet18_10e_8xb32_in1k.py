# W8A8 quantization-aware training of mmcls's ImageNet ResNet-18 for
# OpenVINO, 10 epochs from the float checkpoint (MMRazor's
# qat_openvino_resnet18_10e_8xb32_in1k): min/max weight ranges, moving-average
# activation ranges, straight-through fake quants.
#   bash tools/dist_train.sh configs/quantization/qat/qat_openvino_resnet18_10e_8xb32_in1k.py 8
_base_ = ['mmcls::resnet/resnet18_8xb32_in1k.py']

float_checkpoint = 'https://download.openmmlab.com/mmclassification/v0/resnet/resnet18_8xb32_in1k_20210831-fbbb1da6.pth'  # noqa: E501

global_qconfig = dict(
    w_observer=dict(type='mmrazor_quant.PerChannelMinMaxObserver'),
    a_observer=dict(type='mmrazor_quant.MovingAverageMinMaxObserver'),
    w_fake_quant=dict(type='mmrazor_quant.FakeQuantize'),
    a_fake_quant=dict(type='mmrazor_quant.FakeQuantize'),
    w_qscheme=dict(
        qdtype='qint8', bit=8, is_symmetry=True, is_symmetric_range=True),
    a_qscheme=dict(qdtype='quint8', bit=8, is_symmetry=True),
)

model = dict(
    _delete_=True,
    type='mmrazor_quant.MMArchitectureQuant',
    data_preprocessor=dict(
        type='mmcls.ClsDataPreprocessor', **_base_.data_preprocessor),
    architecture=_base_.model,
    float_checkpoint=float_checkpoint,
    quantizer=dict(
        type='mmrazor_quant.OpenVINOQuantizer',
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

# Fine-tuning: a small constant learning rate.
max_epochs = 10
optim_wrapper = dict(
    optimizer=dict(type='SGD', lr=1e-4, momentum=0.9, weight_decay=1e-4))
param_scheduler = [
    dict(
        type='ConstantLR',
        factor=1.0,
        by_epoch=True,
        begin=0,
        end=max_epochs)
]

# Observers follow the data for the first 5 epochs, then the ranges stay
# fixed; BN statistics are frozen for the last 2 epochs.
train_cfg = dict(
    _delete_=True,
    type='mmrazor_quant.QATEpochBasedLoop',
    max_epochs=max_epochs,
    val_interval=1,
    disable_observer_begin=6,
    freeze_bn_begin=9)
val_cfg = dict(_delete_=True, type='mmrazor_quant.QATValLoop')

# BN running statistics (buffers, not synchronised by DDP with
# broadcast_buffers=False) averaged across ranks after every epoch, before
# the checkpoint is written.
default_hooks = dict(sync=dict(type='SyncBuffersHook'))
