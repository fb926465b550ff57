# mmseg's Fast-SCNN (its own model config, 1.4M parameters) trained from
# scratch on the 64x64 digit canvases, sized for 2 CPU cores.
#   python tools/train.py configs/segmentation/fastscnn_digits.py
_base_ = [
    'mmseg::_base_/models/fast_scnn.py',
    './_base_/digits_runtime.py',
]

# Softmax cross-entropy instead of the Cityscapes config's sigmoid one: with
# the sigmoid loss the model stayed at all-background for 3 epochs.
softmax_ce = dict(type='CrossEntropyLoss', use_sigmoid=False)
# BN instead of SyncBN (one process; the same state dict): the quantizer
# folds Conv+BN, not Conv+SyncBN.
norm_cfg = dict(type='BN', requires_grad=True, momentum=0.01)
data_preprocessor = dict(size=_base_.crop_size)
model = dict(
    data_preprocessor=data_preprocessor,
    backbone=dict(norm_cfg=norm_cfg),
    decode_head=dict(num_classes=_base_.num_classes, norm_cfg=norm_cfg,
                     loss_decode=dict(softmax_ce, loss_weight=1.0)),
    auxiliary_head=[
        dict(head, num_classes=_base_.num_classes, norm_cfg=norm_cfg,
             loss_decode=dict(softmax_ce, loss_weight=0.4))
        for head in _base_.model.auxiliary_head
    ])

max_epochs = 8
train_cfg = dict(type='EpochBasedTrainLoop', max_epochs=max_epochs,
                 val_interval=max_epochs)
optim_wrapper = dict(
    type='OptimWrapper',
    optimizer=dict(type='AdamW', lr=4e-3, weight_decay=1e-4))
param_scheduler = [
    dict(type='CosineAnnealingLR', T_max=max_epochs, by_epoch=True,
         convert_to_iter_based=True)
]
default_hooks = dict(
    checkpoint=dict(type='CheckpointHook', interval=max_epochs))
