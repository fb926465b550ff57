# LSQ fine-tuning of the digit-segmentation configs (keys their PTQ model
# bases do not have): AdamW at a small learning rate, no weight decay on the
# learned scales, and the DDP wrapper. The scheme is
# ../../../_base_/qconfigs/openvino_w8a8_lsq.py; BN statistics stay those
# of the float model.
_base_ = ['../../../_base_/ddp.py']

lsq_optim_wrapper = dict(
    optimizer=dict(type='AdamW', lr=1e-4, weight_decay=1e-4),
    paramwise_cfg=dict(
        norm_decay_mult=0., bias_decay_mult=0.,
        custom_keys={'.scale': dict(decay_mult=0.0)}))
