# LSQ fine-tuning of the keypoint-digit pose configs (keys their PTQ model
# bases do not have) and the DDP wrapper: 3 epochs of AdamW at about the
# float run's final learning rate, cosine to zero; no weight decay on the
# learned scales; BN statistics frozen from epoch 1.
_base_ = ['../../../_base_/ddp.py']

lsq_epochs = 3
lsq_optim_wrapper = dict(
    optimizer=dict(type='AdamW', lr=2e-5, weight_decay=0.),
    paramwise_cfg=dict(custom_keys={'.scale': dict(decay_mult=0.0)}))
lsq_param_scheduler = [
    dict(type='CosineAnnealingLR', T_max=lsq_epochs, by_epoch=True,
         convert_to_iter_based=True)
]
lsq_train_cfg = dict(
    type='mmrazor_quant.LSQEpochBasedLoop',
    max_epochs=lsq_epochs,
    val_interval=lsq_epochs,
    freeze_bn_begin=1)
