# W8A8 LSQ quantization-aware training of the fp32 MNIST ResNet-18 for
# OpenVINO. The first batch sets every scale to LSQ's static estimate
# (2 * mean|x| / sqrt(quant_max), all-reduced across ranks), then scales and
# weights are learned together; BN statistics stay those of the float model.
# The model, wrapper and hooks come from ../_base_/resnet18_mnist.py; the
# scheme from the OpenVINO LSQ qconfig base.
#   python tools/train.py configs/quantization/qat/lsq/lsq_openvino_resnet18_mnist.py
_base_ = [
    '../_base_/resnet18_mnist.py',
    '../../_base_/qconfigs/openvino_w8a8_lsq.py'
]

model = dict(quantizer=_base_.quantizer)

# Fine-tuning from the float model: SGD with a cosine decay over the QAT
# epochs (stepped per iteration); no weight decay on the learned scales.
max_epochs = 1
optim_wrapper = dict(
    # lr 1e-2 drove small per-channel weight scales (~5e-6) negative within
    # 5 steps and the loss to NaN; 1e-3 keeps every scale positive.
    optimizer=dict(lr=1e-4),
    paramwise_cfg=dict(custom_keys={'.scale': dict(decay_mult=0.0)}))
param_scheduler = [dict(_base_.param_scheduler[0], end=max_epochs)]

train_cfg = dict(
    _delete_=True,
    type='mmrazor_quant.LSQEpochBasedLoop',
    max_epochs=max_epochs,
    val_interval=1,
    freeze_bn_begin=1)
