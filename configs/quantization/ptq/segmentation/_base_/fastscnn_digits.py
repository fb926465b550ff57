# The backend-independent part of W8A8 PTQ of the digit-segmentation
# Fast-SCNN: the float model and checkpoint and the 8-batch PTQ loop on
# calibrate_dataloader of configs/_base_/datasets/digit_canvas_seg.py. No
# tracer skips of its own: the mmseg adapter keeps the losses and the
# per-sample post-processing out of the graphs. A backend's config adds its
# qconfig `_base_` and sets `model.quantizer`.
_base_ = ['../../../../segmentation/fastscnn_digits.py', '../../_base_/calib8.py']

model = dict(
    _delete_=True,
    type='mmrazor_quant.MMArchitectureQuant',
    architecture=_base_.model,
    # the canvases' size (what the test pipeline's Resize gives)
    input_shape=(3, *_base_.crop_size),
    # calibrated on what inference runs: the auxiliary heads (loss only)
    # stay float
    forward_modes=('tensor', 'predict'),
    # written by tools/demo.py --task seg
    float_checkpoint='work_dirs/fp32/fastscnn_digits/float.pth')
test_cfg = dict(
    _delete_=True,
    calibrate_dataloader=_base_.calibrate_dataloader,
    **_base_.ptq_loop)
