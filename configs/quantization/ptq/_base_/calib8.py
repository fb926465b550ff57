# The PTQ loop of the digit-canvas configs (detection, YOLO, segmentation,
# pose): 8 calibration batches of their calibrate_dataloader.
ptq_loop = dict(type='mmrazor_quant.PTQLoop', calibrate_steps=8)
