# W8A8 post-training quantization of the keypoint-digit RTMPose-t for
# TensorRT: per-channel symmetric int8 weights on [-127, 127], per-tensor
# signed symmetric activations (../../_base_/qconfigs/tensorrt_w8a8_minmax.py).
#   python tools/ptq.py configs/quantization/ptq/pose/ptq_tensorrt_rtmpose_t_digits.py
_base_ = [
    './_base_/rtmpose_t_digits.py',
    '../../_base_/qconfigs/tensorrt_w8a8_minmax.py',
]

model = dict(quantizer=_base_.quantizer)
