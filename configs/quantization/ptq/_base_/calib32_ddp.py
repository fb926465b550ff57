# The PTQ loop and wrapper of the ImageNet and MNIST classification configs
# and of the COCO detection ones (as MMRazor's): 32 calibration batches and
# the DDP wrapper of the quantized model (../../_base_/ddp.py). The
# calibration loader names the codebase's dataset, so each config writes it.
_base_ = ['../../_base_/ddp.py']

ptq_loop = dict(type='mmrazor_quant.PTQLoop', calibrate_steps=32)
