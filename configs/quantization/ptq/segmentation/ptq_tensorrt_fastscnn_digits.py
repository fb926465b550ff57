# W8A8 post-training quantization of the digit-segmentation Fast-SCNN for
# TensorRT: per-channel symmetric int8 weights on [-127, 127], per-tensor
# signed symmetric activations (../../_base_/qconfigs/tensorrt_w8a8.py).
#   python tools/ptq.py configs/quantization/ptq/segmentation/ptq_tensorrt_fastscnn_digits.py \
#       --cfg-options model.float_checkpoint=work_dirs/seg/fastscnn_digits/epoch_8.pth
_base_ = [
    './_base_/fastscnn_digits.py',
    '../../_base_/qconfigs/tensorrt_w8a8.py',
]

model = dict(quantizer=_base_.quantizer)
