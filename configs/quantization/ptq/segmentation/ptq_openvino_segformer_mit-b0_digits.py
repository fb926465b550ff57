# W8A8 post-training quantization of the digit-segmentation SegFormer MiT-B0 for
# OpenVINO (./_base_/w8a8_openvino.py). The exported graph ends at the
# decode head's logits; the resize and the argmax stay outside it.
#   python tools/ptq.py configs/quantization/ptq/segmentation/ptq_openvino_segformer_mit-b0_digits.py \
#       --cfg-options model.float_checkpoint=work_dirs/seg/segformer_mit-b0_digits/epoch_5.pth
_base_ = [
    '../../../segmentation/segformer_mit-b0_digits.py', './_base_/w8a8_openvino.py'
]

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
    float_checkpoint='work_dirs/fp32/segformer_mit-b0_digits/float.pth',
    quantizer=_base_.quantizer)
test_cfg = dict(
    _delete_=True,
    calibrate_dataloader=_base_.calibrate_dataloader,
    **_base_.ptq_loop)
