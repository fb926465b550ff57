# W8A8 quantization-aware training of mmcls's ImageNet ResNet-18 for
# OpenVINO, 10 epochs from the float checkpoint (MMRazor's
# qat_openvino_resnet18_10e_8xb32_in1k): min/max weight ranges, moving-average
# activation ranges, straight-through fake quants. The model, schedule and
# hooks come from _base_/resnet18_in1k.py.
#   bash tools/dist_train.sh configs/quantization/qat/qat_openvino_resnet18_10e_8xb32_in1k.py 8
_base_ = ['_base_/resnet18_in1k.py']

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
    quantizer=dict(
        type='mmrazor_quant.OpenVINOQuantizer',
        global_qconfig=global_qconfig))

# Observers follow the data for the first 5 epochs, then the ranges stay
# fixed; BN statistics are frozen for the last 2 epochs.
train_cfg = dict(
    _delete_=True,
    type='mmrazor_quant.QATEpochBasedLoop',
    max_epochs=_base_.max_epochs,
    val_interval=1,
    disable_observer_begin=6,
    freeze_bn_begin=9)
