# W8A8 LSQ (learned step size) quantization-aware training of the
# digit-canvas RTMDet-tiny for OpenVINO, from its float checkpoint: the first
# batch sets every scale (and the activations' zero-points) by min-max, on
# the PTQ config's grids (asymmetric u8 activations), then the scales and
# weights are learned together. Validation reports COCO mAP of the quantized
# (``qat.coco/bbox_mAP``) and of the float model (``original.``).
#   python tools/train.py configs/quantization/qat/yolo/lsq_openvino_rtmdet_tiny_digits.py \
#       --cfg-options model.float_checkpoint=work_dirs/yolo/rtmdet_tiny_digits/epoch_15.pth
_base_ = ['../../ptq/yolo/ptq_openvino_rtmdet_tiny_digits.py']

model = dict(
    quantizer=dict(
        # the PTQ config's asymmetric grid (OpenVINO's rounding of SiLU
        # outputs, see it), started by min-max; the zero-point stays the
        # first batch's, only the scale is learned
        global_qconfig=dict(
            a_observer=dict(type='mmrazor_quant.MinMaxObserver'),
            w_fake_quant=dict(type='mmrazor_quant.LearnableFakeQuantize'),
            a_fake_quant=dict(type='mmrazor_quant.LearnableFakeQuantize'),
            a_qscheme=dict(
                _delete_=True, qdtype='quint8', bit=8, is_symmetry=False))))
model_wrapper_cfg = dict(
    type='mmrazor_quant.MMArchitectureQuantDDP',
    broadcast_buffers=False,
    find_unused_parameters=True)

# Fine-tuning: 3 epochs (75 steps) from lr 5e-5, an 80th of the float run's,
# cosine to zero; no weight decay on the learned scales; BN statistics stay
# the float model's. AdamW moves every weight by about lr per step whatever
# its gradient, and RTMDet-tiny's weights are small: one epoch at 3e-4 left
# the float weights (fake quants off) at 9 mAP instead of 38 and the
# quantized model 1.2 below fp32 (4.4 below from LSQ's static estimate,
# 2 mean|x| / sqrt(quant_max), instead of min-max).
max_epochs = 3
optim_wrapper = dict(
    _delete_=True,
    optimizer=dict(type='AdamW', lr=5e-5, weight_decay=5e-4),
    paramwise_cfg=dict(
        norm_decay_mult=0., bias_decay_mult=0.,
        custom_keys={'.scale': dict(decay_mult=0.0)}),
    clip_grad=dict(max_norm=10.))
param_scheduler = [
    dict(type='CosineAnnealingLR', T_max=max_epochs, by_epoch=True,
         convert_to_iter_based=True)
]
train_cfg = dict(
    _delete_=True,
    type='mmrazor_quant.LSQEpochBasedLoop',
    max_epochs=max_epochs,
    val_interval=max_epochs,
    freeze_bn_begin=1)
val_cfg = dict(_delete_=True, type='mmrazor_quant.QATValLoop')
test_cfg = dict(_delete_=True, type='TestLoop')
default_hooks = dict(sync=dict(type='SyncBuffersHook'))
