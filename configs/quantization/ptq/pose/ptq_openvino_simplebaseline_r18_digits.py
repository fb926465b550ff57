# W8A8 post-training quantization of the keypoint-digit SimpleBaseline-R18 for
# OpenVINO: per-channel symmetric int8 weights on [-127, 127], per-tensor
# unsigned symmetric activations. The exported graph ends at the head's raw
# outputs; decoding to keypoints stays outside it (docs/pose.md).
#   python tools/ptq.py configs/quantization/ptq/pose/ptq_openvino_simplebaseline_r18_digits.py
_base_ = [
    '../../../pose/simplebaseline_r18_digits.py',
    '../../_base_/qconfigs/openvino_w8a8_minmax.py',
    '../_base_/calib8.py'
]

# Written by tools/demo.py --task pose; after your own fp32 training pass
# --cfg-options model.float_checkpoint=work_dirs/simplebaseline_r18_digits/epoch_30.pth
float_checkpoint = 'work_dirs/fp32/simplebaseline_r18_digits/float.pth'

# 8 batches of 32 training digits through the deterministic test pipeline.
calibrate_dataloader = dict(
    batch_size=32,
    num_workers=0,
    dataset=dict(_base_.pose_train_dataset, pipeline=_base_.val_pipeline),
    sampler=dict(type='DefaultSampler', shuffle=True))

# The mmpose adapter supplies the input size (the test pipeline's
# TopdownAffine), the rewrites of the sample loops and the skipped decode
# and loss modules; the config names no skipped method.
model = dict(
    _delete_=True,
    type='mmrazor_quant.MMArchitectureQuant',
    data_preprocessor=_base_.model.data_preprocessor,
    architecture=_base_.model,
    float_checkpoint=float_checkpoint,
    quantizer=_base_.quantizer)

test_cfg = dict(
    _delete_=True,
    calibrate_dataloader=calibrate_dataloader,
    **_base_.ptq_loop)
