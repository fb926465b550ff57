# W8A8 post-training quantization of the keypoint-digit RTMPose-t for
# TensorRT: per-channel symmetric int8 weights on [-127, 127], per-tensor
# signed symmetric activations (the OpenVINO config's calibration).
#   python tools/ptq.py configs/quantization/ptq/pose/ptq_tensorrt_rtmpose_t_digits.py
_base_ = ['./ptq_openvino_rtmpose_t_digits.py']

model = dict(
    quantizer=dict(
        type='mmrazor_quant.TensorRTQuantizer',
        global_qconfig=dict(
            a_qscheme=dict(qdtype='qint8', bit=8, is_symmetry=True,
                           is_symmetric_range=True))))
