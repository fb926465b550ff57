# The PTQ loop and wrapper of the ImageNet and MNIST classification configs
# and of the COCO detection ones (as MMRazor's): 32 calibration batches and
# the DDP wrapper of the quantized model. The calibration loader names the
# codebase's dataset, so each config writes it.
model_wrapper_cfg = dict(
    type='mmrazor_quant.MMArchitectureQuantDDP',
    broadcast_buffers=False,
    find_unused_parameters=True)

ptq_loop = dict(type='mmrazor_quant.PTQLoop', calibrate_steps=32)
