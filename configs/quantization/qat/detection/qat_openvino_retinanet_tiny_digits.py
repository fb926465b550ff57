# W8A8 quantization-aware training of the small digit-canvas RetinaNet for
# OpenVINO, from its float checkpoint: min/max observers track the
# activation ranges during the first epoch, then stay fixed; BN statistics
# freeze from epoch 2. Validation reports COCO mAP of the quantized
# (``qat.coco/bbox_mAP``) and of the float model (``original.``).
#   python tools/train.py configs/quantization/qat/detection/qat_openvino_retinanet_tiny_digits.py \
#       --cfg-options model.float_checkpoint=work_dirs/det/retinanet_tiny_digits/epoch_24.pth
_base_ = [
    '../../ptq/detection/_base_/retinanet_tiny_digits.py',
    '../../_base_/qconfigs/openvino_w8a8.py',
    '../../_base_/ddp.py',
]

model = dict(quantizer=_base_.quantizer)

# Fine-tuning: a tenth of the float run's learning rate, cosine to zero.
max_epochs = 3
optim_wrapper = dict(
    _delete_=True,
    optimizer=dict(type='AdamW', lr=2e-4, weight_decay=1e-4),
    paramwise_cfg=dict(custom_keys={'.scale': dict(decay_mult=0.0)}),
    clip_grad=dict(max_norm=10.))
param_scheduler = [
    dict(type='CosineAnnealingLR', T_max=max_epochs, by_epoch=True,
         convert_to_iter_based=True)
]
train_cfg = dict(
    _delete_=True,
    type='mmrazor_quant.QATEpochBasedLoop',
    max_epochs=max_epochs,
    val_interval=1,
    freeze_bn_begin=2,
    disable_observer_begin=2)
val_cfg = dict(_delete_=True, type='mmrazor_quant.QATValLoop')
test_cfg = dict(_delete_=True, type='TestLoop')
default_hooks = dict(sync=dict(type='SyncBuffersHook'))
