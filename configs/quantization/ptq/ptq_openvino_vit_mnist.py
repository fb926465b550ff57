# W8A8 post-training quantization of the fp32 MNIST ViT for OpenVINO, with
# NNCF's transformer placement (model_type='transformer'): linear layers and
# the Q @ K^T matmul run in int8; residual adds, LayerNorm, GELU, softmax
# and attn @ V stay float (docs/backends.md).
#   python tools/ptq.py configs/quantization/ptq/ptq_openvino_vit_mnist.py
_base_ = ['../../fp32/vit_mnist.py']

# Written by `make demo` (tools/demo.py).
float_checkpoint = 'work_dirs/fp32/vit_mnist/float.pth'

# Calibrate on training digits with the deterministic test pipeline.
calibrate_dataloader = dict(
    batch_size=64,
    num_workers=0,
    dataset=dict(
        type=_base_.dataset_type, split='train',
        pipeline=_base_.test_pipeline),
    sampler=dict(type='DefaultSampler', shuffle=True))

global_qconfig = dict(
    w_observer=dict(type='mmrazor_quant.PerChannelMinMaxObserver'),
    a_observer=dict(type='mmrazor_quant.MinMaxObserver'),
    w_fake_quant=dict(type='mmrazor_quant.FakeQuantize'),
    a_fake_quant=dict(type='mmrazor_quant.FakeQuantize'),
    w_qscheme=dict(
        qdtype='qint8', bit=8, is_symmetry=True, is_symmetric_range=True),
    # token features are signed: signed symmetric activations, which
    # OpenVINO's Q @ K^T takes in int8 (asymmetric ones would run the
    # score matmul, softmax and attn @ V in float)
    a_qscheme=dict(qdtype='qint8', bit=8, is_symmetry=True),
)

model = dict(
    _delete_=True,
    type='mmrazor_quant.MMArchitectureQuant',
    data_preprocessor=dict(
        type='mmcls.ClsDataPreprocessor', **_base_.data_preprocessor),
    architecture=_base_.model,
    float_checkpoint=float_checkpoint,
    # shape-aware capture: the patch embedding pads from the input size
    input_shape=(1, 28, 28),
    quantizer=dict(
        type='mmrazor_quant.OpenVINOQuantizer',
        model_type='transformer',
        global_qconfig=global_qconfig,
        tracer=dict(
            type='mmrazor_quant.CustomTracer',
            skipped_methods=[
                'mmcls.models.heads.ClsHead._get_loss',
                'mmcls.models.heads.ClsHead._get_predictions'
            ])))

model_wrapper_cfg = dict(
    type='mmrazor_quant.MMArchitectureQuantDDP',
    broadcast_buffers=False,
    find_unused_parameters=True)

test_cfg = dict(
    _delete_=True,
    type='mmrazor_quant.PTQLoop',
    calibrate_dataloader=calibrate_dataloader,
    calibrate_steps=32)
