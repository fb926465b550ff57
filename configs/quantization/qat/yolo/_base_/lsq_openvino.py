# LSQ fine-tuning of the digit-canvas YOLO configs (keys their PTQ model bases
# do not have; the scheme is
# ../../../_base_/qconfigs/openvino_w8a8_lsq_minmax_asym.py) and the DDP
# wrapper. 3 epochs (75 steps) of AdamW from lr 5e-5, an 80th of the float
# run's, cosine to zero; no weight decay on the learned scales; BN statistics
# stay the float model's.
_base_ = ['../../../_base_/ddp.py']

lsq_epochs = 3
lsq_optim_wrapper = dict(
    optimizer=dict(type='AdamW', lr=5e-5, weight_decay=5e-4),
    paramwise_cfg=dict(
        norm_decay_mult=0., bias_decay_mult=0.,
        custom_keys={'.scale': dict(decay_mult=0.0)}),
    clip_grad=dict(max_norm=10.))
lsq_param_scheduler = [
    dict(type='CosineAnnealingLR', T_max=lsq_epochs, by_epoch=True,
         convert_to_iter_based=True)
]
lsq_train_cfg = dict(
    type='mmrazor_quant.LSQEpochBasedLoop',
    max_epochs=lsq_epochs,
    val_interval=lsq_epochs,
    freeze_bn_begin=1)
