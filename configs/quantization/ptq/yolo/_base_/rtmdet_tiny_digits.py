# The backend-independent part of W8A8 PTQ of the digit-canvas RTMDet-tiny: the
# float model and checkpoint and 8 calibration batches of 16 training
# canvases through the deterministic test pipeline, drawn with a fixed seed
# (the calibration is reproducible). The mmyolo adapter keeps the head's
# decoding and losses out of the graph, so no tracer skips are named. A
# backend's config adds its qconfig `_base_` and sets `model.quantizer`.
_base_ = ['../../../../yolo/rtmdet_tiny_digits.py', '../../_base_/calib8.py']

# Written by tools/demo.py --task yolo.
float_checkpoint = 'work_dirs/fp32/rtmdet_tiny_digits/float.pth'

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
    float_checkpoint=float_checkpoint)

test_cfg = dict(
    _delete_=True,
    calibrate_dataloader=calibrate_dataloader,
    **_base_.ptq_loop)
