# W8A8 post-training quantization of the keypoint-digit RTMPose-t for
# OpenVINO: per-channel symmetric int8 weights on [-127, 127], per-tensor
# asymmetric uint8 activations. The exported graph ends at the head's raw
# outputs; decoding to keypoints stays outside it (docs/pose.md).
#   python tools/ptq.py configs/quantization/ptq/pose/ptq_openvino_rtmpose_t_digits.py
_base_ = ['../../../pose/rtmpose_t_digits.py']

# Written by tools/demo.py --task pose; after your own fp32 training pass
# --cfg-options model.float_checkpoint=work_dirs/rtmpose_t_digits/epoch_30.pth
float_checkpoint = 'work_dirs/fp32/rtmpose_t_digits/float.pth'

# 8 batches of 32 training digits through the deterministic test pipeline.
calibrate_dataloader = dict(
    batch_size=32,
    num_workers=0,
    dataset=dict(_base_.pose_train_dataset, pipeline=_base_.val_pipeline),
    sampler=dict(type='DefaultSampler', shuffle=True))

global_qconfig = dict(
    w_observer=dict(type='mmrazor_quant.PerChannelMinMaxObserver'),
    a_observer=dict(type='mmrazor_quant.MinMaxObserver'),
    w_fake_quant=dict(type='mmrazor_quant.FakeQuantize'),
    a_fake_quant=dict(type='mmrazor_quant.FakeQuantize'),
    w_qscheme=dict(
        qdtype='qint8', bit=8, is_symmetry=True, is_symmetric_range=True),
    # Asymmetric activations (NNCF's "mixed" preset): CSPNeXt's SiLU outputs
    # reach -0.28, which the symmetric uint8 grid holds only with zero-point
    # 128, and there OpenVINO rounds x / s + 128 in float32, settling as ties
    # values a few 1e-6 steps from .5 that the simulation rounds exactly;
    # the SimCC head multiplies such flips (OpenVINO parity 31.8 dB
    # symmetric, 38.4 dB asymmetric; docs/pose.md).
    a_qscheme=dict(qdtype='quint8', bit=8, is_symmetry=False),
)

# The mmpose adapter supplies the input size (the test pipeline's
# TopdownAffine), the rewrites of the sample loops and the skipped decode
# and loss modules; the config names no skipped method.
model = dict(
    _delete_=True,
    type='mmrazor_quant.MMArchitectureQuant',
    data_preprocessor=_base_.model.data_preprocessor,
    architecture=_base_.model,
    float_checkpoint=float_checkpoint,
    quantizer=dict(
        type='mmrazor_quant.OpenVINOQuantizer',
        global_qconfig=global_qconfig,
        tracer=dict(type='mmrazor_quant.CustomTracer')))

test_cfg = dict(
    _delete_=True,
    type='mmrazor_quant.PTQLoop',
    calibrate_dataloader=calibrate_dataloader,
    calibrate_steps=8)
