# W8A8 post-training quantization of the keypoint-digit SimpleBaseline-R18 for
# OpenVINO: per-channel symmetric int8 weights on [-127, 127], per-tensor
# unsigned symmetric activations. The exported graph ends at the head's raw
# outputs; decoding to keypoints stays outside it (docs/pose.md).
#   python tools/ptq.py configs/quantization/ptq/pose/ptq_openvino_simplebaseline_r18_digits.py
_base_ = [
    './_base_/simplebaseline_r18_digits.py',
    '../../_base_/qconfigs/openvino_w8a8_minmax.py',
]

model = dict(quantizer=_base_.quantizer)
