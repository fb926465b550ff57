# W8A8 post-training quantization of a model file for OpenVINO: the ONNX
# file and a calibration folder (.npy/.npz/.bin or images) are all it needs.
#   python tools/ptq.py configs/quantization/ptq/onnx/ptq_openvino_onnx_file.py \
#       --cfg-options model.architecture.path=model.onnx \
#       test_cfg.calibrate_dataloader.dataset.data_root=calib/ \
#       test_dataloader.dataset.data_root=val/ test_evaluator.path=model.onnx \
#       --export
# The test set is a second folder of the same kind; the metric runs the float
# file in onnxruntime on it and reports the quantized model's SQNR against it.
# Other targets: change the quantizer (docs/onnx_models.md, "Defaults").
default_scope = 'mmrazor_quant'
custom_imports = dict(
    imports=['mmrazor_quant.datasets', 'mmrazor_quant.frontends'],
    allow_failed_imports=False)
randomness = dict(seed=0, deterministic=False)
env_cfg = dict(dist_cfg=dict(backend='gloo'))
default_hooks = dict(logger=dict(type='LoggerHook', interval=20))

onnx_file = 'model.onnx'

# The front door's OpenVINO defaults (mmrazor_quant.frontends.defaults):
# the target's W8A8 schemes with asymmetric activations (symmetric on the
# inputs of depthwise convs), per-channel min/max weights, histogram MSE
# activation ranges, then bias correction.
global_qconfig = dict(
    w_observer=dict(type='mmrazor_quant.PerChannelMinMaxObserver'),
    a_observer=dict(type='mmrazor_quant.HistogramMSEObserver'),
    w_fake_quant=dict(type='mmrazor_quant.FakeQuantize'),
    a_fake_quant=dict(type='mmrazor_quant.FakeQuantize'),
    w_qscheme=dict(
        qdtype='qint8', bit=8, is_symmetry=True, is_symmetric_range=True),
    a_qscheme=dict(qdtype='quint8', bit=8, is_symmetry=False))

model = dict(
    type='mmrazor_quant.MMArchitectureQuant',
    architecture=dict(type='mmrazor_quant.OnnxModel', path=onnx_file),
    quantizer=dict(
        type='mmrazor_quant.OpenVINOQuantizer',
        global_qconfig=global_qconfig,
        depthwise_symmetric_tolerance=0.25),
    # the test loop runs 'predict' (the same outputs as 'tensor')
    forward_modes=('tensor', 'predict'),
    deploy_cfg=dict(backend_config=dict(type='openvino')))

calibrate_dataloader = dict(
    batch_size=8,
    num_workers=0,
    dataset=dict(
        type='mmrazor_quant.CalibrationFolderDataset', data_root='calib/'),
    sampler=dict(type='DefaultSampler', shuffle=False),
    collate_fn=dict(type='default_collate'))
test_dataloader = dict(
    batch_size=8,
    num_workers=0,
    dataset=dict(
        type='mmrazor_quant.CalibrationFolderDataset', data_root='val/'),
    sampler=dict(type='DefaultSampler', shuffle=False),
    collate_fn=dict(type='default_collate'))
test_evaluator = dict(type='FloatReferenceMetric', path=onnx_file)
test_cfg = dict(
    type='mmrazor_quant.PTQLoop',
    calibrate_dataloader=calibrate_dataloader,
    calibrate_steps=8,
    ptq_passes=[dict(type='correct_bias', single_pass=True)])
