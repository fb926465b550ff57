# What MMRazor's ImageNet PTQ configs share: 32 calibration batches (of 32
# images per GPU, 8 GPUs) and the DDP wrapper of the quantized model. The
# calibration loader itself names the codebase's dataset, so each config
# writes it.
model_wrapper_cfg = dict(
    type='mmrazor_quant.MMArchitectureQuantDDP',
    broadcast_buffers=False,
    find_unused_parameters=True)

ptq_loop = dict(type='mmrazor_quant.PTQLoop', calibrate_steps=32)
