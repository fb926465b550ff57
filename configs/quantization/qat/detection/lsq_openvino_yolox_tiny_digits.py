# W8A8 LSQ (learned step size) quantization-aware training of the small
# digit-canvas YOLOX for OpenVINO, from its float checkpoint: the first batch
# sets every scale to LSQ's static estimate (all-reduced across ranks), then
# scales and weights are learned together. Validation reports COCO mAP of
# the quantized (``qat.coco/bbox_mAP``) and of the float model
# (``original.``).
#   python tools/train.py configs/quantization/qat/detection/lsq_openvino_yolox_tiny_digits.py \
#       --cfg-options model.float_checkpoint=work_dirs/det/yolox_tiny_digits/epoch_16.pth
_base_ = [
    '../../ptq/detection/_base_/yolox_tiny_digits.py',
    '../../_base_/qconfigs/openvino_w8a8_lsq.py',
    '../_base_/lsq_3epochs.py',
]

model = dict(quantizer=_base_.quantizer)

# Fine-tuning: a tenth of the float run's learning rate, cosine to zero
# (../_base_/lsq_3epochs.py); no weight decay on the learned scales;
# validation every epoch, BN statistics frozen from epoch 2.
max_epochs = _base_.lsq_epochs
optim_wrapper = dict(
    _delete_=True,
    optimizer=dict(type='AdamW', lr=2e-4, weight_decay=5e-4),
    paramwise_cfg=dict(
        norm_decay_mult=0., bias_decay_mult=0.,
        custom_keys={'.scale': dict(decay_mult=0.0)}),
    clip_grad=dict(max_norm=10.))
param_scheduler = _base_.lsq_param_scheduler
train_cfg = dict(
    _base_.lsq_train_cfg, _delete_=True, val_interval=1, freeze_bn_begin=2)
val_cfg = dict(_delete_=True, type='mmrazor_quant.QATValLoop')
test_cfg = dict(_delete_=True, type='TestLoop')
default_hooks = dict(sync=dict(type='SyncBuffersHook'))
