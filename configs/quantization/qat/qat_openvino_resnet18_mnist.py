# W8A8 quantization-aware training of the fp32 MNIST ResNet-18 for OpenVINO
# with straight-through fake quants: min/max weight ranges, moving-average
# activation ranges (all-reduced across ranks) during the first epoch, fixed
# ranges and frozen BN statistics in the second. The model, wrapper and
# hooks come from _base_/resnet18_mnist.py; the scheme from the OpenVINO
# qconfig base.
#   python tools/train.py configs/quantization/qat/qat_openvino_resnet18_mnist.py
_base_ = [
    '_base_/resnet18_mnist.py',
    '../_base_/qconfigs/openvino_w8a8.py'
]

model = dict(quantizer=_base_.quantizer)

# Fine-tuning from the float model: SGD with a cosine decay over the QAT
# epochs (stepped per iteration).
max_epochs = 2
param_scheduler = [dict(_base_.param_scheduler[0], end=max_epochs)]

train_cfg = dict(
    _delete_=True,
    type='mmrazor_quant.QATEpochBasedLoop',
    max_epochs=max_epochs,
    val_interval=1,
    disable_observer_begin=2,
    freeze_bn_begin=2)
