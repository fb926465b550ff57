# LSQ fine-tuning of the keypoint-digit pose configs:
# ../../_base_/lsq_3epochs.py with AdamW at about the float run's final
# learning rate and no weight decay on the learned scales.
_base_ = ['../../_base_/lsq_3epochs.py']

lsq_optim_wrapper = dict(
    optimizer=dict(type='AdamW', lr=2e-5, weight_decay=0.),
    paramwise_cfg=dict(custom_keys={'.scale': dict(decay_mult=0.0)}))
