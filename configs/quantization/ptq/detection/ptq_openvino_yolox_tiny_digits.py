# W8A8 post-training quantization of the small digit-canvas YOLOX for
# OpenVINO: per-channel symmetric int8 weights on [-127, 127], per-tensor
# asymmetric u8 activations (why: below); YOLOXHead's post-processing
# and losses stay out of the graph.
#   python tools/ptq.py configs/quantization/ptq/detection/ptq_openvino_yolox_tiny_digits.py \
#       --cfg-options model.float_checkpoint=work_dirs/det/yolox_tiny_digits/epoch_16.pth
# Asymmetric activations (../../_base_/qconfigs/openvino_w8a8_asym.py): 70.0
# mAP (fp32 70.4) and 42.5 dB export parity in OpenVINO, against 69.6 and
# 34.7 dB with symmetric ones.
_base_ = [
    './_base_/yolox_tiny_digits.py',
    '../../_base_/qconfigs/openvino_w8a8_asym.py',
]

model = dict(quantizer=_base_.quantizer)
