# The LSQ fine-tuning schedule of the digit-canvas detection, YOLO and pose
# configs (keys their PTQ model bases do not have): 3 epochs, the learning
# rate cosine to zero per iteration, validation at the end, BN statistics
# frozen from epoch 1, and the DDP wrapper. A task's recipe base adds its
# optimizer (`lsq_optim_wrapper`); a config takes the keys it needs.
_base_ = ['../../_base_/ddp.py']

lsq_epochs = 3
lsq_param_scheduler = [
    dict(type='CosineAnnealingLR', T_max=lsq_epochs, by_epoch=True,
         convert_to_iter_based=True)
]
lsq_train_cfg = dict(
    type='mmrazor_quant.LSQEpochBasedLoop',
    max_epochs=lsq_epochs,
    val_interval=lsq_epochs,
    freeze_bn_begin=1)
