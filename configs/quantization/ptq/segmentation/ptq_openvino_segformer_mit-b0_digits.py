# W8A8 post-training quantization of the digit-segmentation SegFormer MiT-B0 for
# OpenVINO (../../_base_/qconfigs/openvino_w8a8.py). The exported graph ends at the
# decode head's logits; the resize and the argmax stay outside it.
#   python tools/ptq.py configs/quantization/ptq/segmentation/ptq_openvino_segformer_mit-b0_digits.py \
#       --cfg-options model.float_checkpoint=work_dirs/seg/segformer_mit-b0_digits/epoch_5.pth
_base_ = [
    './_base_/segformer_mit-b0_digits.py',
    '../../_base_/qconfigs/openvino_w8a8.py',
]

model = dict(quantizer=_base_.quantizer)
