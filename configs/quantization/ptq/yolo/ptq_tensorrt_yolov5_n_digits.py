# W8A8 post-training quantization of the digit-canvas YOLOv5-n for TensorRT:
# per-channel symmetric int8 weights on [-127, 127], per-tensor signed
# symmetric activations (../../_base_/qconfigs/tensorrt_w8a8.py), then empirical
# bias correction (Nagel et al., 2019; NNCF's default pipeline corrects
# biases too). TensorRT runs activations on the signed grid only, so each
# SiLU output (down to -0.28) gets half the levels of OpenVINO's asymmetric
# grid; the bias correction removes the mean shift this leaves in each
# conv's output, in the float biases the export writes.
#   python tools/ptq.py configs/quantization/ptq/yolo/ptq_tensorrt_yolov5_n_digits.py \
#       --cfg-options model.float_checkpoint=work_dirs/yolo/yolov5_n_digits/epoch_15.pth
_base_ = [
    './_base_/yolov5_n_digits.py',
    '../../_base_/qconfigs/tensorrt_w8a8.py',
]

model = dict(quantizer=_base_.quantizer)

# Every conv's bias (BN shift) corrected on the 128 calibration canvases.
test_cfg = dict(ptq_passes=[dict(type='correct_bias', num_samples=128)])
