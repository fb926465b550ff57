# The backend-independent part of W8A8 PTQ of the fp32 MNIST MobileNetV2:
# calibration on 32 batches of training digits and the DDP wrapper; the model,
# and its checkpoint come from
# ../../../_base_/models/mobilenetv2_mnist.py. A backend's config adds its
# qconfig `_base_` and sets `model.quantizer`.
_base_ = ['../../../_base_/models/mobilenetv2_mnist.py', '../calib32_ddp.py']

test_cfg = dict(
    _delete_=True,
    calibrate_dataloader=_base_.calibrate_dataloader,
    **_base_.ptq_loop)
