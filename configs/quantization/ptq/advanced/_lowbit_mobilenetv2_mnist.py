# Shared part of the low-bit PTQ configs of the MNIST MobileNetV2 (see
# _lowbit_resnet18_mnist.py): AcademicQuantizer, 8-bit first/last layer,
# per-channel asymmetric min/max weights, histogram-MSE activation ranges.
_base_ = ['../ptq_openvino_mobilenetv2_mnist.py']

w_bit = 4
a_bit = 4
global_qconfig = dict(
    w_observer=dict(type='mmrazor_quant.PerChannelMinMaxObserver'),
    a_observer=dict(type='mmrazor_quant.HistogramMSEObserver'),
    w_fake_quant=dict(type='mmrazor_quant.FakeQuantize'),
    a_fake_quant=dict(type='mmrazor_quant.FakeQuantize'),
    w_qscheme=dict(qdtype='qint8', bit=w_bit, is_symmetry=False),
    a_qscheme=dict(qdtype='quint8', bit=a_bit, is_symmetry=False),
)
model = dict(
    quantizer=dict(
        _delete_=True,
        type='mmrazor_quant.AcademicQuantizer',
        global_qconfig=global_qconfig,
        first_last_bit=8,
        tracer=dict(
            type='mmrazor_quant.CustomTracer',
            skipped_methods=[
                'mmcls.models.heads.ClsHead._get_loss',
                'mmcls.models.heads.ClsHead._get_predictions'
            ])))

test_cfg = dict(
    calibrate_steps=16,
    ptq_passes=[dict(type='qdrop', drop_prob=0.5, iters=300,
                     num_samples=512, batch_size=32, seed=0)])
