# W8A8 post-training quantization of the keypoint-digit RTMPose-t for
# OpenVINO: per-channel symmetric int8 weights on [-127, 127], per-tensor
# asymmetric uint8 activations. The exported graph ends at the head's raw
# outputs; decoding to keypoints stays outside it (docs/pose.md).
#   python tools/ptq.py configs/quantization/ptq/pose/ptq_openvino_rtmpose_t_digits.py
# Asymmetric activations: CSPNeXt's SiLU outputs reach -0.28 and the SimCC
# head multiplies OpenVINO's float32 rounding flips around zero-point 128
# (OpenVINO parity 31.8 dB symmetric, 38.4 dB asymmetric; docs/pose.md).
_base_ = [
    './_base_/rtmpose_t_digits.py',
    '../../_base_/qconfigs/openvino_w8a8_minmax_asym.py',
]

model = dict(quantizer=_base_.quantizer)
