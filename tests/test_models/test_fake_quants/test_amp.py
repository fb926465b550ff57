"""Half-precision (AMP) inputs through every fake quant and observer.

Under ``AmpOptimWrapper`` the fake quants see float16/bfloat16 tensors. The
quantization arithmetic runs in float32 (kernels.py), so for an input ``h``
of a half dtype:

* observers record ``h`` exactly as they record ``h.float()`` (same qparams);
* the output is the float32 fake quant of ``h.float()`` rounded once to the
  half dtype, hence within one quantization step of the float32 result on
  the float32 input ``x`` (``|x - h|`` is below half an fp16/bf16 ulp);
* the gradients of ``x`` and the learned qparams equal those of the
  float32 run on ``h.float()``, up to that single rounding.
"""
import contextlib
import copy
import math
import os.path as osp
import sys

import pytest
import torch
from mmengine.optim import AmpOptimWrapper
from torch import nn

from mmrazor_quant.models.fake_quants import (
    AdaRoundFakeQuantize,
    FakeQuantize,
    LearnableFakeQuantize,
    LSQPlusFakeQuantize,
    PACTFakeQuantize,
    QDropFakeQuantize,
)
from mmrazor_quant.models.observers import (
    HistogramObserver,
    KLObserver,
    LSQObserver,
    LSQPlusObserver,
    MinMaxObserver,
    MovingAverageMinMaxObserver,
    MSEObserver,
    PerChannelMinMaxObserver,
)
from mmrazor_quant.structures.quantization import QSchema

REPO = osp.dirname(osp.dirname(osp.dirname(osp.dirname(
    osp.abspath(__file__)))))
HALF = [torch.float16, torch.bfloat16]
SYM = dict(qdtype='qint8', is_symmetry=True)


def _tqt():
    # the same import path as tests/test_extensibility (it registers once)
    path = osp.join(REPO, 'examples', 'custom_algorithm')
    if path not in sys.path:
        sys.path.insert(0, path)
    from tqt import TQTFakeQuantize
    return TQTFakeQuantize(MinMaxObserver(QSchema(**SYM)))


FAKE_QUANTS = {
    'fixed_affine': lambda: FakeQuantize(MinMaxObserver(QSchema())),
    'fixed_per_channel': lambda: FakeQuantize(PerChannelMinMaxObserver(
        QSchema(**SYM, is_symmetric_range=True, ch_axis=1))),
    'moving_average': lambda: FakeQuantize(
        MovingAverageMinMaxObserver(QSchema(), 0.5)),
    'lsq': lambda: LearnableFakeQuantize(LSQObserver(QSchema(**SYM))),
    'lsq_plus': lambda: LSQPlusFakeQuantize(LSQPlusObserver(QSchema())),
    'pact': lambda: PACTFakeQuantize(MinMaxObserver(QSchema())),
    'qdrop': lambda: QDropFakeQuantize(MinMaxObserver(QSchema()),
                                       drop_prob=0.5),
    'tqt': _tqt,
}
OBSERVERS = {
    'minmax': lambda: MinMaxObserver(QSchema()),
    'per_channel': lambda: PerChannelMinMaxObserver(QSchema(**SYM,
                                                            ch_axis=1)),
    'moving_average': lambda: MovingAverageMinMaxObserver(QSchema(), 0.5),
    'histogram': lambda: HistogramObserver(QSchema(), bins=256,
                                           percentile=99.),
    'kl': lambda: KLObserver(QSchema(**SYM), bins=256),
    'mse': lambda: MSEObserver(QSchema(**SYM, bit=4), num_candidates=50),
    'lsq': lambda: LSQObserver(QSchema(**SYM)),
    'lsq_plus': lambda: LSQPlusObserver(QSchema()),
}


def _inputs(dtype):
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(4, 8, 6, 6, generator=gen) * 3 + 0.5
    half = x.to(dtype)
    return x, half, half.float()


def _run(fq, x, seed=0):
    if isinstance(fq, QDropFakeQuantize):
        fq.generator = torch.Generator().manual_seed(seed)
    x = x.clone().requires_grad_()
    y = fq(x)
    # upstream gradients exact in every half dtype (multiples of 1/4)
    weights = torch.randint(-4, 5, y.shape,
                            generator=torch.Generator().manual_seed(1)) / 4
    (y.float() * weights).sum().backward()
    return y, x.grad


def _learned_grads(fq):
    return {n: p.grad.clone() for n, p in fq.named_parameters()
            if p.grad is not None}


@pytest.mark.parametrize('dtype', HALF, ids=str)
@pytest.mark.parametrize('name', sorted(FAKE_QUANTS))
def test_fake_quant_in_half_precision(name, dtype):
    x, half, widened = _inputs(dtype)
    fq16 = FAKE_QUANTS[name]().train()
    fq32 = copy.deepcopy(fq16)
    y16, gx16 = _run(fq16, half)   # first call observes, then quantizes
    y32, gx32 = _run(fq32, widened)
    assert y16.dtype == dtype and gx16.dtype == dtype
    # same statistics and qparams as the float32 run on the same values
    for (n, a), (_, b) in zip(fq16.state_dict().items(),
                              fq32.state_dict().items()):
        torch.testing.assert_close(a, b, rtol=0, atol=0, msg=n)
    # the float32 result, rounded once to the half dtype
    torch.testing.assert_close(y16, y32.to(dtype), rtol=0, atol=0)
    torch.testing.assert_close(gx16, gx32.to(dtype), rtol=0, atol=0)
    for n, g in _learned_grads(fq16).items():
        torch.testing.assert_close(g, _learned_grads(fq32)[n], rtol=1e-5,
                                   atol=1e-7, msg=n)
    # and, with the same qparams, within one quantization step (plus the
    # output's rounding to the half dtype) of float32 on the float32 input
    fq_x = copy.deepcopy(fq32)
    fq_x.disable_observer()
    y_x, _ = _run(fq_x, x)
    step = _step(fq32)
    ulp = torch.finfo(dtype).eps * y_x.detach().abs()
    assert ((y16.float() - y_x).abs() <= step + ulp).all()


def _step(fq) -> float:
    """The largest quantization step of ``fq``'s grid."""
    if hasattr(fq, 'log2_t'):  # TQT: a power-of-two scale
        return float(2.0**torch.ceil(fq.log2_t) / fq.levels)
    if hasattr(fq, 'positive_alpha'):  # PACT: [0, alpha] in 2^b - 1 steps
        qmin, qmax = fq.qscheme.quant_range
        return float(fq.positive_alpha()) / (qmax - qmin)
    return float(fq.scale.max())


@pytest.mark.parametrize('dtype', HALF, ids=str)
def test_adaround_in_half_precision(dtype):
    weight = torch.randn(8, 4, 3, 3,
                         generator=torch.Generator().manual_seed(1))
    base = FakeQuantize(PerChannelMinMaxObserver(
        QSchema(**SYM, is_symmetric_range=True)))
    base(weight)
    fq32 = AdaRoundFakeQuantize.from_fake_quant(base)
    fq32.init_alpha(weight)
    fq16 = copy.deepcopy(fq32)
    half = weight.to(dtype)
    y16, _ = _run(fq16, half)
    y32, _ = _run(fq32, half.float())
    assert y16.dtype == dtype
    torch.testing.assert_close(y16, y32.to(dtype), rtol=0, atol=0)
    torch.testing.assert_close(fq16.alpha.grad, fq32.alpha.grad)


@pytest.mark.parametrize('dtype', HALF, ids=str)
@pytest.mark.parametrize('name', sorted(OBSERVERS))
def test_observer_statistics_in_float32(name, dtype):
    x, half, widened = _inputs(dtype)
    second = (x * 0.5 - 1).to(dtype)
    obs16, obs32 = OBSERVERS[name](), OBSERVERS[name]()
    for a, b in ((half, widened), (second, second.float())):
        obs16(a)
        obs32(b)
    scale16, zp16 = obs16.calculate_qparams()
    scale32, zp32 = obs32.calculate_qparams()
    assert scale16.dtype == torch.float32
    torch.testing.assert_close(scale16, scale32, rtol=0, atol=0)
    torch.testing.assert_close(zp16, zp32, rtol=0, atol=0)


def test_integer_input_names_the_module_and_dtype():
    fq = FakeQuantize(MinMaxObserver(QSchema()))
    fq.name = 'backbone.conv1.weight_fake_quant'
    fq(torch.randn(4, 4))
    with pytest.raises(TypeError, match=(
            r'backbone.conv1.weight_fake_quant: cannot fake-quantize a '
            r'torch.int32 input; supported dtypes are')):
        fq(torch.ones(4, 4, dtype=torch.int32))


class _TinyQAT(nn.Module):
    """conv -> LSQ fake quant -> linear, the shape of a QAT block."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3)
        self.act_fq = LearnableFakeQuantize(LSQObserver(QSchema()))
        self.fc = nn.Linear(8, 4)

    def forward(self, x):
        x = self.act_fq(torch.relu(self.conv(x)))
        return self.fc(x.mean((2, 3)))


def _train(model, data, target, steps, context):
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    losses = []
    for _ in range(steps):
        with context():
            loss = nn.functional.cross_entropy(model(data), target)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(float(loss))
    return losses


def _amp_run(dtype, device='cpu'):
    """fp32 and autocast training of the same block from the same start."""
    gen = torch.Generator().manual_seed(0)
    data = torch.randn(16, 3, 8, 8, generator=gen).to(device)
    target = torch.randint(0, 4, (16, ), generator=gen).to(device)
    torch.manual_seed(0)
    reference = _TinyQAT().to(device)
    amp_model = copy.deepcopy(reference)
    fp32 = _train(reference, data, target, 8, contextlib.nullcontext)
    amp = _train(amp_model, data, target, 8,
                 lambda: torch.autocast(device, dtype=dtype))
    return reference, amp_model, fp32, amp


@pytest.mark.parametrize('dtype', HALF, ids=str)
def test_autocast_trains_lsq_on_cpu(dtype):
    """CPU autocast (what AmpOptimWrapper turns on; mmengine 0.10.7 allows
    the wrapper itself only on accelerators): an LSQ block trains, its scale
    learns, and the losses track the float32 run."""
    reference, amp_model, fp32, amp = _amp_run(dtype)
    assert all(map(math.isfinite, amp)) and amp[-1] < amp[0]
    grad = amp_model.act_fq.scale.grad
    assert grad is not None and math.isfinite(float(grad)) and float(grad)
    assert not torch.equal(amp_model.act_fq.scale, _TinyQAT().act_fq.scale)
    assert amp[-1] == pytest.approx(fp32[-1], rel=0.05)


@pytest.mark.cuda
@pytest.mark.parametrize('dtype', ['bfloat16', 'float16'])
def test_amp_optim_wrapper_trains_lsq_on_cuda(dtype):
    """mmengine's AmpOptimWrapper (autocast + dynamic loss scaling)."""
    gen = torch.Generator().manual_seed(0)
    data = torch.randn(16, 3, 8, 8, generator=gen).cuda()
    target = torch.randint(0, 4, (16, ), generator=gen).cuda()
    torch.manual_seed(0)
    model = _TinyQAT().cuda()
    wrapper = AmpOptimWrapper(
        optimizer=torch.optim.SGD(model.parameters(), lr=0.1),
        dtype=dtype, loss_scale='dynamic')
    losses = []
    for _ in range(8):
        with wrapper.optim_context(model):
            loss = nn.functional.cross_entropy(model(data), target)
        wrapper.update_params(loss)
        losses.append(float(loss))
    _, _, fp32, _ = _amp_run(torch.float32, 'cuda')
    assert all(map(math.isfinite, losses)) and losses[-1] < losses[0]
    assert losses[-1] == pytest.approx(fp32[-1], rel=0.05)
