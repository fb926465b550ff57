# W8A8 LSQ (learned step size) quantization-aware training of the
# digit-canvas YOLOv5-n for OpenVINO, from its float checkpoint: the first
# batch sets every scale (and the activations' zero-points) by min-max, on
# the PTQ config's grids (asymmetric u8 activations), then the scales and
# weights are learned together. Validation reports COCO mAP of the quantized
# (``qat.coco/bbox_mAP``) and of the float model (``original.``).
#   python tools/train.py configs/quantization/qat/yolo/lsq_openvino_yolov5_n_digits.py \
#       --cfg-options model.float_checkpoint=work_dirs/yolo/yolov5_n_digits/epoch_15.pth
_base_ = [
    '../../ptq/yolo/_base_/yolov5_n_digits.py',
    '../../_base_/qconfigs/openvino_w8a8_lsq_minmax_asym.py',
    './_base_/lsq_openvino.py',
]

model = dict(quantizer=_base_.quantizer)

# Why lr 5e-5: the min-max start is PTQ's model, so the steps only have to
# recover its small loss; a low learning rate keeps the weights near the
# float ones (AdamW moves every weight by about lr per step).
max_epochs = _base_.lsq_epochs
optim_wrapper = dict(_delete_=True, **_base_.lsq_optim_wrapper)
param_scheduler = _base_.lsq_param_scheduler
train_cfg = dict(_delete_=True, **_base_.lsq_train_cfg)
val_cfg = dict(_delete_=True, type='mmrazor_quant.QATValLoop')
test_cfg = dict(_delete_=True, type='TestLoop')
default_hooks = dict(sync=dict(type='SyncBuffersHook'))
