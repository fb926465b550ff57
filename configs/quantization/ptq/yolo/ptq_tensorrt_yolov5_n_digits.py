# W8A8 post-training quantization of the digit-canvas YOLOv5-n for TensorRT:
# per-channel symmetric int8 weights on [-127, 127], per-tensor signed
# symmetric activations (the OpenVINO config's calibration), then empirical
# bias correction (Nagel et al., 2019; NNCF's default pipeline corrects
# biases too). TensorRT runs activations on the signed grid only, so each
# SiLU output (down to -0.28) gets half the levels of OpenVINO's asymmetric
# grid; the bias correction removes the mean shift this leaves in each
# conv's output, in the float biases the export writes.
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

# Every conv's bias (BN shift) corrected on the 128 calibration canvases.
test_cfg = dict(ptq_passes=[dict(type='correct_bias', num_samples=128)])
