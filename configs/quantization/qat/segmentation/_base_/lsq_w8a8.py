# LSQ fine-tuning of the digit-segmentation configs (keys their PTQ bases do
# not have): learned-step-size fake quants, AdamW at a small learning rate
# with a cosine decay, no weight decay on the learned scales; BN statistics
# stay those of the float model.
lsq_qconfig = dict(
    w_observer=dict(type='mmrazor_quant.LSQPerChannelObserver'),
    a_observer=dict(type='mmrazor_quant.LSQObserver'),
    w_fake_quant=dict(type='mmrazor_quant.LearnableFakeQuantize'),
    a_fake_quant=dict(type='mmrazor_quant.LearnableFakeQuantize'),
    w_qscheme=dict(qdtype='qint8', bit=8, is_symmetry=True,
                   is_symmetric_range=True),
    a_qscheme=dict(qdtype='quint8', bit=8, is_symmetry=True))
lsq_optim_wrapper = dict(
    optimizer=dict(type='AdamW', lr=1e-4, weight_decay=1e-4),
    paramwise_cfg=dict(
        norm_decay_mult=0., bias_decay_mult=0.,
        custom_keys={'.scale': dict(decay_mult=0.0)}))
model_wrapper_cfg = dict(
    type='mmrazor_quant.MMArchitectureQuantDDP',
    broadcast_buffers=False,
    find_unused_parameters=True)
