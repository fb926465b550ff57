# W8A8 post-training quantization of the digit-segmentation SegFormer MiT-B0 for
# TensorRT: per-channel symmetric int8 weights on [-127, 127], per-tensor
# signed symmetric activations (../../_base_/qconfigs/tensorrt_w8a8.py).
#   python tools/ptq.py configs/quantization/ptq/segmentation/ptq_tensorrt_segformer_mit-b0_digits.py \
#       --cfg-options model.float_checkpoint=work_dirs/seg/segformer_mit-b0_digits/epoch_5.pth
_base_ = [
    './_base_/segformer_mit-b0_digits.py',
    '../../_base_/qconfigs/tensorrt_w8a8.py',
]

model = dict(quantizer=_base_.quantizer)
