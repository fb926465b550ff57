# W8A8 post-training quantization of the fp32 MNIST ViT for LiteRT (the
# TFLite int8 spec): every linear, matmul, add, GELU and softmax runs in
# int8 (softmax output on the spec's fixed grid 1/256, zero-point -128);
# LayerNorm has no int8 kernel and runs in float between DEQUANTIZE and
# QUANTIZE (docs/deploy.md).
#   python tools/ptq.py configs/quantization/ptq/ptq_litert_vit_mnist.py --export litert
_base_ = ['./ptq_openvino_vit_mnist.py']

global_qconfig = dict(
    w_observer=dict(type='mmrazor_quant.PerChannelMinMaxObserver'),
    a_observer=dict(type='mmrazor_quant.MinMaxObserver'),
    w_fake_quant=dict(type='mmrazor_quant.FakeQuantize'),
    a_fake_quant=dict(type='mmrazor_quant.FakeQuantize'),
    w_qscheme=dict(
        qdtype='qint8', bit=8, is_symmetry=True, is_symmetric_range=True),
    a_qscheme=dict(qdtype='qint8', bit=8, is_symmetry=False),
)

model = dict(
    quantizer=dict(
        _delete_=True,
        type='mmrazor_quant.LiteRTQuantizer',
        global_qconfig=global_qconfig,
        tracer=dict(
            type='mmrazor_quant.CustomTracer',
            skipped_methods=[
                'mmcls.models.heads.ClsHead._get_loss',
                'mmcls.models.heads.ClsHead._get_predictions'
            ])))
