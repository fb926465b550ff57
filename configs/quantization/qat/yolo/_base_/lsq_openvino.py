# LSQ fine-tuning of the digit-canvas YOLO configs: ../../_base_/lsq_3epochs.py
# with AdamW from lr 5e-5, an 80th of the float run's; no weight decay on
# the learned scales, norms and biases; gradients clipped at 10. The scheme
# is ../../../_base_/qconfigs/openvino_w8a8_lsq_minmax_asym.py.
_base_ = ['../../_base_/lsq_3epochs.py']

lsq_optim_wrapper = dict(
    optimizer=dict(type='AdamW', lr=5e-5, weight_decay=5e-4),
    paramwise_cfg=dict(
        norm_decay_mult=0., bias_decay_mult=0.,
        custom_keys={'.scale': dict(decay_mult=0.0)}),
    clip_grad=dict(max_norm=10.))
