# LSQ fine-tuning of the digit-segmentation configs (keys their PTQ model
# bases do not have): AdamW at a small learning rate, cosine to zero, no
# weight decay on the learned scales, validation every epoch, and the DDP
# wrapper. A model config sets the epochs (``T_max`` of the scheduler and
# ``max_epochs`` of the loop). The scheme is
# ../../../_base_/qconfigs/openvino_w8a8_lsq.py; BN statistics stay those
# of the float model.
_base_ = ['../../../_base_/ddp.py']

lsq_optim_wrapper = dict(
    optimizer=dict(type='AdamW', lr=1e-4, weight_decay=1e-4),
    paramwise_cfg=dict(
        norm_decay_mult=0., bias_decay_mult=0.,
        custom_keys={'.scale': dict(decay_mult=0.0)}))
lsq_cosine = dict(
    type='CosineAnnealingLR', by_epoch=True, convert_to_iter_based=True)
lsq_train_cfg = dict(
    type='mmrazor_quant.LSQEpochBasedLoop', val_interval=1, freeze_bn_begin=1)
