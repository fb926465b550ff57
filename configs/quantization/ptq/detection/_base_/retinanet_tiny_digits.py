# The backend-independent part of W8A8 PTQ of the small digit-canvas
# RetinaNet: the float model and checkpoint and 8 batches of the dataset
# base's calibrate_dataloader. The wrapper runs the detector's own data
# preprocessor, and the mmdet adapter keeps the head's post-processing and
# losses out of the graph, so neither is named. A backend's config adds its
# qconfig `_base_` and sets `model.quantizer`.
_base_ = ['../../../../detection/retinanet_tiny_digits.py', '../../_base_/calib8.py']

float_checkpoint = 'work_dirs/det/retinanet_tiny_digits/epoch_24.pth'

model = dict(
    _delete_=True,
    type='mmrazor_quant.MMArchitectureQuant',
    architecture=_base_.model,
    float_checkpoint=float_checkpoint)

test_cfg = dict(
    _delete_=True,
    calibrate_dataloader=_base_.calibrate_dataloader,
    **_base_.ptq_loop)
