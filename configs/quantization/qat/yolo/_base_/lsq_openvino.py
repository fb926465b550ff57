# LSQ fine-tuning of the digit-canvas YOLO configs (keys their PTQ bases do
# not have). The qconfig keeps the PTQ config's asymmetric grid (OpenVINO's
# rounding of SiLU outputs, see it), started by min-max; the zero-point
# stays the first batch's, only the scale is learned. 3 epochs (75 steps)
# of AdamW from lr 5e-5, an 80th of the float run's, cosine to zero; no
# weight decay on the learned scales; BN statistics stay the float model's.
lsq_qconfig = dict(
    a_observer=dict(type='mmrazor_quant.MinMaxObserver'),
    w_fake_quant=dict(type='mmrazor_quant.LearnableFakeQuantize'),
    a_fake_quant=dict(type='mmrazor_quant.LearnableFakeQuantize'),
    a_qscheme=dict(
        _delete_=True, qdtype='quint8', bit=8, is_symmetry=False))
model_wrapper_cfg = dict(
    type='mmrazor_quant.MMArchitectureQuantDDP',
    broadcast_buffers=False,
    find_unused_parameters=True)
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
