# W8A8 post-training quantization of the small digit-canvas RetinaNet for
# TensorRT: per-channel symmetric int8 weights on [-127, 127], per-tensor
# signed symmetric activations (../../_base_/qconfigs/tensorrt_w8a8.py).
#   python tools/ptq.py configs/quantization/ptq/detection/ptq_tensorrt_retinanet_tiny_digits.py \
#       --cfg-options model.float_checkpoint=work_dirs/det/retinanet_tiny_digits/epoch_24.pth
_base_ = [
    './_base_/retinanet_tiny_digits.py',
    '../../_base_/qconfigs/tensorrt_w8a8.py',
]

model = dict(quantizer=_base_.quantizer)
