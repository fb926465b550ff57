# W8A8 post-training quantization of the digit-canvas RTMDet-tiny for OpenVINO:
# per-channel symmetric int8 weights on [-127, 127], per-tensor asymmetric
# u8 activations (../../_base_/qconfigs/openvino_w8a8_asym.py says
# why; symmetric ones lost 1.4 mAP here, asymmetric ones 0.3-0.4).
#   python tools/ptq.py configs/quantization/ptq/yolo/ptq_openvino_rtmdet_tiny_digits.py \
#       --cfg-options model.float_checkpoint=work_dirs/yolo/rtmdet_tiny_digits/epoch_15.pth
_base_ = [
    './_base_/rtmdet_tiny_digits.py',
    '../../_base_/qconfigs/openvino_w8a8_asym.py',
]

model = dict(quantizer=_base_.quantizer)
