# W8A8 LSQ (learned step size) quantization-aware training of the
# digit-segmentation Fast-SCNN for OpenVINO, from its float checkpoint
# (../../_base_/qconfigs/openvino_w8a8_lsq.py): the first batch sets every
# scale to LSQ's static estimate, then scales and weights are learned together.
# Validation reports the mIoU of the quantized (``qat.mIoU``) and the float
# model.
#   python tools/train.py configs/quantization/qat/segmentation/lsq_openvino_fastscnn_digits.py \
#       --cfg-options model.float_checkpoint=work_dirs/seg/fastscnn_digits/epoch_8.pth
_base_ = [
    '../../ptq/segmentation/_base_/fastscnn_digits.py',
    '../../_base_/qconfigs/openvino_w8a8_lsq.py', './_base_/lsq_w8a8.py'
]

model = dict(
    forward_modes=('tensor', 'predict', 'loss'), quantizer=_base_.quantizer)
max_epochs = 2
optim_wrapper = dict(_delete_=True, **_base_.lsq_optim_wrapper)
param_scheduler = [dict(_base_.lsq_cosine, T_max=max_epochs)]
train_cfg = dict(_delete_=True, max_epochs=max_epochs, **_base_.lsq_train_cfg)
val_cfg = dict(_delete_=True, type='mmrazor_quant.QATValLoop')
test_cfg = dict(_delete_=True, type='TestLoop')
default_hooks = dict(sync=dict(type='SyncBuffersHook'))
