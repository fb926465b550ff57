# mmseg's SegFormer MiT-B0 (its own model config: efficient self-attention
# with spatial reduction, Mix-FFN, the all-MLP decode head; 3.7M parameters)
# trained from scratch on the 64x64 digit canvases, sized for 2 CPU cores.
#   python tools/train.py configs/segmentation/segformer_mit-b0_digits.py
_base_ = [
    'mmseg::_base_/models/segformer_mit-b0.py',
    './_base_/digits_runtime.py',
]

# BN instead of SyncBN in the head (one process; the same state dict): the
# quantizer folds Conv+BN, not Conv+SyncBN.
norm_cfg = dict(type='BN', requires_grad=True)
data_preprocessor = dict(size=_base_.crop_size)
model = dict(
    data_preprocessor=data_preprocessor,
    decode_head=dict(num_classes=_base_.num_classes, norm_cfg=norm_cfg))

max_epochs = 5
train_cfg = dict(type='EpochBasedTrainLoop', max_epochs=max_epochs,
                 val_interval=max_epochs)
# mmseg's SegFormer recipe (AdamW, no decay on norms and position
# convolutions, 10x on the head) at a from-scratch learning rate.
optim_wrapper = dict(
    type='OptimWrapper',
    optimizer=dict(type='AdamW', lr=1e-3, betas=(0.9, 0.999),
                   weight_decay=0.01),
    paramwise_cfg=dict(custom_keys={
        'pos_block': dict(decay_mult=0.),
        'norm': dict(decay_mult=0.),
        'head': dict(lr_mult=2.)
    }))
param_scheduler = [
    dict(type='CosineAnnealingLR', T_max=max_epochs, by_epoch=True,
         convert_to_iter_based=True)
]
default_hooks = dict(
    checkpoint=dict(type='CheckpointHook', interval=max_epochs))
