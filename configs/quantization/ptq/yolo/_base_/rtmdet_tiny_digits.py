# The backend-independent part of W8A8 PTQ of the digit-canvas RTMDet-tiny: the
# float model and checkpoint and 8 batches of the dataset base's
# calibrate_dataloader (16 training canvases through the deterministic test
# pipeline), drawn with a fixed seed (the calibration is reproducible). The
# wrapper runs the detector's own data preprocessor; the mmyolo adapter
# keeps the head's decoding and losses out of the graph, so no tracer skips
# are named. A backend's config adds its qconfig `_base_` and sets
# `model.quantizer`.
_base_ = ['../../../../yolo/rtmdet_tiny_digits.py', '../../_base_/calib8.py']

# Written by tools/demo.py --task yolo.
float_checkpoint = 'work_dirs/fp32/rtmdet_tiny_digits/float.pth'

randomness = dict(seed=0)
model = dict(
    _delete_=True,
    type='mmrazor_quant.MMArchitectureQuant',
    architecture=_base_.model,
    float_checkpoint=float_checkpoint)

test_cfg = dict(
    _delete_=True,
    calibrate_dataloader=_base_.calibrate_dataloader,
    **_base_.ptq_loop)
