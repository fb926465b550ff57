# W8A8 LSQ (learned step size) quantization-aware training of the
# digit-canvas RTMDet-tiny for OpenVINO, from its float checkpoint: the first
# batch sets every scale to LSQ's static estimate, then scales and weights
# are learned together. Validation reports COCO mAP of the quantized
# (``qat.coco/bbox_mAP``) and of the float model (``original.``).
#   python tools/train.py configs/quantization/qat/yolo/lsq_openvino_rtmdet_tiny_digits.py \
#       --cfg-options model.float_checkpoint=work_dirs/yolo/rtmdet_tiny_digits/epoch_15.pth
_base_ = ['../../ptq/yolo/ptq_openvino_rtmdet_tiny_digits.py']

model = dict(
    quantizer=dict(
        global_qconfig=dict(
            _delete_=True,
            w_observer=dict(type='mmrazor_quant.LSQPerChannelObserver'),
            a_observer=dict(type='mmrazor_quant.LSQObserver'),
            w_fake_quant=dict(type='mmrazor_quant.LearnableFakeQuantize'),
            a_fake_quant=dict(type='mmrazor_quant.LearnableFakeQuantize'),
            w_qscheme=dict(qdtype='qint8', bit=8, is_symmetry=True,
                           is_symmetric_range=True),
            # the PTQ config's asymmetric grid (OpenVINO's rounding of
            # SiLU outputs, see it); the zero-point stays the first
            # batch's, only the scale is learned
            a_qscheme=dict(qdtype='quint8', bit=8, is_symmetry=False))))
model_wrapper_cfg = dict(
    type='mmrazor_quant.MMArchitectureQuantDDP',
    broadcast_buffers=False,
    find_unused_parameters=True)

# Fine-tuning: 8 epochs (200 iterations of 32 canvases) from a twentieth of
# the float run's learning rate, cosine to zero (LSQ's scales start from
# 2 * mean|x| / sqrt(quant_max), not min-max, and need the epochs: one
# epoch left 31.6 mAP against the float model's 38.1); no weight decay on
# the learned scales; BN statistics frozen from epoch 5. The weights learn
# to rely on the learned clipping: with every fake quant off
# (``original.``) up to 7 % of a tensor's activations exceed their clip
# range and the mAP is far below the float model's.
max_epochs = 8
optim_wrapper = dict(
    _delete_=True,
    optimizer=dict(type='AdamW', lr=2e-4, weight_decay=5e-4),
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
    freeze_bn_begin=5)
val_cfg = dict(_delete_=True, type='mmrazor_quant.QATValLoop')
test_cfg = dict(_delete_=True, type='TestLoop')
default_hooks = dict(sync=dict(type='SyncBuffersHook'))
