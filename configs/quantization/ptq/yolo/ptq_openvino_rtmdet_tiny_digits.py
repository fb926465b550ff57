# W8A8 post-training quantization of the digit-canvas RTMDet-tiny for OpenVINO:
# per-channel symmetric int8 weights on [-127, 127], per-tensor asymmetric
# u8 activations (../../_base_/qconfigs/openvino_w8a8_asym.py says
# why; symmetric ones lost 1.4 mAP here, asymmetric ones 0.3-0.4).
# The mmyolo adapter keeps the head's decoding and losses out of the graph;
# no tracer skips are needed here.
#   python tools/ptq.py configs/quantization/ptq/yolo/ptq_openvino_rtmdet_tiny_digits.py \
#       --cfg-options model.float_checkpoint=work_dirs/yolo/rtmdet_tiny_digits/epoch_15.pth
_base_ = [
    '../../../yolo/rtmdet_tiny_digits.py',
    '../../_base_/qconfigs/openvino_w8a8_asym.py',
    '../_base_/calib8.py'
]

# Written by tools/demo.py --task yolo.
float_checkpoint = 'work_dirs/fp32/rtmdet_tiny_digits/float.pth'

# 8 batches of 16 training canvases through the deterministic test pipeline,
# drawn with a fixed seed (the calibration is reproducible).
randomness = dict(seed=0)
calibrate_dataloader = dict(
    batch_size=16,
    num_workers=0,
    dataset=dict(_base_.train_dataloader.dataset,
                 pipeline=_base_.test_pipeline),
    sampler=dict(type='DefaultSampler', shuffle=True))

model = dict(
    _delete_=True,
    type='mmrazor_quant.MMArchitectureQuant',
    data_preprocessor=_base_.model.data_preprocessor,
    architecture=_base_.model,
    float_checkpoint=float_checkpoint,
    quantizer=_base_.quantizer)

test_cfg = dict(
    _delete_=True,
    calibrate_dataloader=calibrate_dataloader,
    **_base_.ptq_loop)
