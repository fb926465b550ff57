# W8A8 post-training quantization of the digit-canvas RTMDet-tiny for TensorRT:
# per-channel symmetric int8 weights on [-127, 127], per-tensor signed
# symmetric activations (the OpenVINO config's calibration).
#   python tools/ptq.py configs/quantization/ptq/yolo/ptq_tensorrt_rtmdet_tiny_digits.py \
#       --cfg-options model.float_checkpoint=work_dirs/yolo/rtmdet_tiny_digits/epoch_15.pth
_base_ = ['./ptq_openvino_rtmdet_tiny_digits.py']

model = dict(
    quantizer=dict(
        type='mmrazor_quant.TensorRTQuantizer',
        global_qconfig=dict(
            a_qscheme=dict(qdtype='qint8', bit=8, is_symmetry=True,
                           is_symmetric_range=True,
                           averaging_constant=0.1))))
