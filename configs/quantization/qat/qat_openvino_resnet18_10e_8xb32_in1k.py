# W8A8 quantization-aware training of mmcls's ImageNet ResNet-18 for
# OpenVINO, 10 epochs from the float checkpoint (MMRazor's
# qat_openvino_resnet18_10e_8xb32_in1k): min/max weight ranges, moving-average
# activation ranges, straight-through fake quants. The model, schedule and
# hooks come from _base_/resnet18_in1k.py.
#   bash tools/dist_train.sh configs/quantization/qat/qat_openvino_resnet18_10e_8xb32_in1k.py 8
_base_ = ['_base_/resnet18_in1k.py', '../_base_/qconfigs/_base_/w8a8.py']

# OpenVINO's grid (../_base_/qconfigs/openvino_w8a8.py) with the observer's
# own averaging constant, as MMRazor's config.
global_qconfig = dict(a_qscheme=dict(qdtype='quint8', bit=8, is_symmetry=True))

model = dict(
    quantizer=dict(
        type='mmrazor_quant.OpenVINOQuantizer',
        global_qconfig=dict(_base_.global_qconfig, **global_qconfig)))

train_cfg = dict(
    _delete_=True,
    type='mmrazor_quant.QATEpochBasedLoop',
    max_epochs=_base_.max_epochs,
    val_interval=1,
    disable_observer_begin=6,
    freeze_bn_begin=9)
