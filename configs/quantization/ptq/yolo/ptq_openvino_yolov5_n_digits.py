# W8A8 post-training quantization of the digit-canvas YOLOv5-n for OpenVINO:
# per-channel symmetric int8 weights on [-127, 127], per-tensor asymmetric
# u8 activations (NNCF's MIXED preset, which NNCF's own YOLO examples use;
# why: at a_qscheme). The mmyolo adapter keeps the head's decoding and
# losses out of the graph; no tracer skips are needed here.
#   python tools/ptq.py configs/quantization/ptq/yolo/ptq_openvino_yolov5_n_digits.py \
#       --cfg-options model.float_checkpoint=work_dirs/yolo/yolov5_n_digits/epoch_15.pth
_base_ = ['../../../yolo/yolov5_n_digits.py']

# Written by tools/demo.py --task yolo.
float_checkpoint = 'work_dirs/fp32/yolov5_n_digits/float.pth'

# 8 batches of 16 training canvases through the deterministic test pipeline,
# drawn with a fixed seed (the calibration is reproducible).
randomness = dict(seed=0)
calibrate_dataloader = dict(
    batch_size=16,
    num_workers=0,
    dataset=dict(_base_.train_dataloader.dataset,
                 pipeline=_base_.test_pipeline),
    sampler=dict(type='DefaultSampler', shuffle=True))

global_qconfig = dict(
    w_observer=dict(type='mmrazor_quant.PerChannelMinMaxObserver'),
    a_observer=dict(type='mmrazor_quant.MovingAverageMinMaxObserver'),
    w_fake_quant=dict(type='mmrazor_quant.FakeQuantize'),
    a_fake_quant=dict(type='mmrazor_quant.FakeQuantize'),
    w_qscheme=dict(
        qdtype='qint8', bit=8, is_symmetry=True, is_symmetric_range=True),
    # SiLU outputs reach -0.28: a symmetric grid would put their zero-point
    # at 128, and OpenVINO's CPU FakeQuantize rounds x / s + zero_point in
    # float32, so around 128 it loses ties closer than 7.6e-6 steps that
    # the simulation rounds exactly; this network multiplies such one-step
    # flips layer after layer (docs/detection.md). Asymmetric, the
    # zero-point is a few steps and the grid twice as fine: the symmetric
    # grid also lost 0.5-1.1 mAP here, the asymmetric one 0.1-0.3.
    a_qscheme=dict(qdtype='quint8', bit=8, is_symmetry=False,
                   averaging_constant=0.1),
)

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
