# Settings shared by every low-bit PTQ config of this folder (both models,
# all bit widths and methods), referenced as `_base_.lowbit_qconfig` and
# `_base_.reconstruction`.

# The papers' setting: per-channel asymmetric weights from min/max (their
# rounding is what AdaRound/BRECQ/QDrop learn), per-tensor unsigned
# activations with histogram-MSE clipping ranges. The `naive_*` children set
# the bit widths (4/4 here).
lowbit_qconfig = dict(
    w_observer=dict(type='mmrazor_quant.PerChannelMinMaxObserver'),
    a_observer=dict(type='mmrazor_quant.HistogramMSEObserver'),
    w_fake_quant=dict(type='mmrazor_quant.FakeQuantize'),
    a_fake_quant=dict(type='mmrazor_quant.FakeQuantize'),
    w_qscheme=dict(qdtype='qint8', bit=4, is_symmetry=False),
    a_qscheme=dict(qdtype='quint8', bit=4, is_symmetry=False),
)

# 16 calibration batches of 64 training digits = the 1,024 samples BRECQ and
# QDrop reconstruct from; batches of 32 as in their code. 200 Adam steps per
# unit instead of their 20,000 (CPU budget), so Adam's learning rate on the
# rounding variables is 1e-2 instead of 1e-3: Adam moves each variable by
# about lr per step (measured W2A4 ResNet-18 QDrop: last-block error 41 at
# 1e-3, 13 at 1e-2; see docs/advanced_ptq.md).
calibrate_steps = 16
reconstruction = dict(
    iters=200, num_samples=1024, batch_size=32, lr=1e-2, seed=0)
