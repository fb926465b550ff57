# W8A8 post-training quantization of the small digit-canvas RetinaNet for
# OpenVINO: per-channel symmetric int8 weights on [-127, 127], per-tensor
# unsigned symmetric activations; post-processing and losses stay out of
# the graph.
#   python tools/ptq.py configs/quantization/ptq/detection/ptq_openvino_retinanet_tiny_digits.py \
#       --cfg-options model.float_checkpoint=work_dirs/det/retinanet_tiny_digits/epoch_24.pth
_base_ = [
    './_base_/retinanet_tiny_digits.py',
    '../../_base_/qconfigs/openvino_w8a8.py',
]

model = dict(quantizer=_base_.quantizer)
