# The backend-independent part of W8A8 PTQ of the keypoint-digit RTMPose-t:
# the float model and checkpoint and 8 batches of the dataset base's
# calibrate_dataloader (32 training digits through the deterministic test
# pipeline). The wrapper runs the model's own data preprocessor; the
# mmpose adapter supplies the input size (the test pipeline's
# TopdownAffine), the rewrites of the sample loops and the skipped decode
# and loss modules, so no tracer skips are named. A backend's config adds its qconfig `_base_` and sets
# `model.quantizer`.
_base_ = ['../../../../pose/rtmpose_t_digits.py', '../../_base_/calib8.py']

# Written by tools/demo.py --task pose; after your own fp32 training pass
# --cfg-options model.float_checkpoint=work_dirs/rtmpose_t_digits/epoch_30.pth
float_checkpoint = 'work_dirs/fp32/rtmpose_t_digits/float.pth'

model = dict(
    _delete_=True,
    type='mmrazor_quant.MMArchitectureQuant',
    architecture=_base_.model,
    float_checkpoint=float_checkpoint)

test_cfg = dict(
    _delete_=True,
    calibrate_dataloader=_base_.calibrate_dataloader,
    **_base_.ptq_loop)
