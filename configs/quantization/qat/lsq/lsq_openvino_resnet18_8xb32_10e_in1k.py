# W8A8 LSQ (learned step size) quantization-aware training of mmcls's
# ImageNet ResNet-18 for OpenVINO, 10 epochs from the float checkpoint
# (MMRazor's lsq_openvino_resnet18_8xb32_10e_in1k: 69.42 top-1). The first
# batch initialises every scale (all-reduced across ranks), then the scales
# are learned with the weights. The model, schedule and hooks come from
# ../_base_/resnet18_in1k.py; the scheme from the OpenVINO LSQ qconfig base.
#   bash tools/dist_train.sh configs/quantization/qat/lsq/lsq_openvino_resnet18_8xb32_10e_in1k.py 8
_base_ = [
    '../_base_/resnet18_in1k.py',
    '../../_base_/qconfigs/openvino_w8a8_lsq.py'
]

model = dict(quantizer=_base_.quantizer)

# BN statistics frozen from the first epoch: the folded weights the scales
# are learned for stay those of the float model's statistics.
train_cfg = dict(
    _delete_=True,
    type='mmrazor_quant.LSQEpochBasedLoop',
    max_epochs=_base_.max_epochs,
    val_interval=1,
    freeze_bn_begin=1)
