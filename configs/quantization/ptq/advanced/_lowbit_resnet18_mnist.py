# Shared part of the low-bit PTQ configs of the MNIST ResNet-18: the
# papers' setting (AcademicQuantizer: fake quants on conv/linear inputs and
# weights; first and last layer at 8 bit), per-channel asymmetric weights,
# per-tensor unsigned activations with histogram-MSE clipping ranges
# (weights: min/max; their rounding is what the passes learn). The
# children set the bit widths and the PTQ passes.
_base_ = ['../ptq_academic_resnet18_mnist.py']

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
    quantizer=dict(global_qconfig=global_qconfig, first_last_bit=8))

# 16 batches of 64 training digits: calibration, then 512 of them cached
# for reconstruction.
test_cfg = dict(
    calibrate_steps=16,
    ptq_passes=[dict(type='qdrop', drop_prob=0.5, iters=300,
                     num_samples=512, batch_size=32, seed=0)])
