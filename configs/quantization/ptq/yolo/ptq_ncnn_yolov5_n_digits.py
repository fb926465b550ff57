# W8A8 post-training quantization of the digit-canvas YOLOv5-n for ncnn:
# the TensorRT config's scheme and calibration (per-channel symmetric int8
# weights, per-tensor signed symmetric activations, both on [-127, 127],
# then empirical bias correction) with NCNNQuantizer's placement: fake
# quants on the inputs of the convs only, the layers ncnn runs in int8;
# SiLU, the residual adds, SPPF's max pooling, the upsampling and the
# concats run in float32 in ncnn as in the simulation. The export is the
# head's raw per-level outputs (decoding and NMS outside, as for the other
# runtimes).
#   python tools/ptq.py configs/quantization/ptq/yolo/ptq_ncnn_yolov5_n_digits.py --export ncnn \
#       --cfg-options model.float_checkpoint=work_dirs/yolo/yolov5_n_digits/epoch_15.pth
_base_ = ['./ptq_tensorrt_yolov5_n_digits.py']

model = dict(quantizer=dict(type='mmrazor_quant.NCNNQuantizer'))
