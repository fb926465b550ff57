# W8A8 post-training quantization of the digit-canvas YOLOv5-n for TensorRT:
# per-channel symmetric int8 weights on [-127, 127], per-tensor signed
# symmetric activations (the OpenVINO config's calibration).
#   python tools/ptq.py configs/quantization/ptq/yolo/ptq_tensorrt_yolov5_n_digits.py \
#       --cfg-options model.float_checkpoint=work_dirs/yolo/yolov5_n_digits/epoch_15.pth
_base_ = ['./ptq_openvino_yolov5_n_digits.py']

model = dict(
    quantizer=dict(
        type='mmrazor_quant.TensorRTQuantizer',
        global_qconfig=dict(
            a_qscheme=dict(qdtype='qint8', bit=8, is_symmetry=True,
                           is_symmetric_range=True,
                           averaging_constant=0.1))))
