"""LearnableFakeQuantize (LSQ) and LSQ+."""
import math

import pytest
import torch

from mmrazor_quant.models.fake_quants import (
    LearnableFakeQuantize,
    LSQPlusFakeQuantize,
)
from mmrazor_quant.registry import MODELS
from mmrazor_quant.structures.quantization import calculate_qparams
from .helpers import observer


def _calibrated(per_channel=False, **kwargs):
    cls = kwargs.pop('cls', LearnableFakeQuantize)
    qscheme = kwargs.pop('qscheme', dict(qdtype='qint8', bit=4))
    fq = cls(observer(per_channel=per_channel, **qscheme), **kwargs)
    return fq


def test_first_batch_copies_the_observer_estimate_into_parameters():
    fq = _calibrated()
    x = torch.randn(32)
    fq(x)
    scale, zp = calculate_qparams(x.min(), x.max(), fq.qscheme)
    assert isinstance(fq.scale, torch.nn.Parameter)
    assert not isinstance(fq.zero_point, torch.nn.Parameter)
    assert fq.scale.shape == () and fq.zero_point.dtype == torch.float32
    assert fq.scale.item() == scale.item()
    assert fq.zero_point.item() == zp.item() and fq.is_initialized
    assert [n for n, _ in fq.named_parameters()] == ['scale']


def test_lsq_scale_gradient_is_the_paper_formula_times_g():
    fq = _calibrated()
    fq(torch.randn(64))  # static estimate
    fq.disable_observer()
    x = torch.randn(6, 8) * 2
    fq(x).sum().backward()
    s, z = fq.scale.detach(), fq.zero_point
    v = x / s
    q = torch.round(v) + z
    per_elem = torch.where(q < -8, -8 - z, torch.where(q > 7, 7 - z,
                                                       torch.round(v) - v))
    g = 1 / math.sqrt(x.numel() * 7)
    assert fq.grad_factor(x) == pytest.approx(g)
    assert fq.scale.grad.item() == pytest.approx(
        (per_elem.sum() * g).item(), rel=1e-5, abs=1e-6)


def test_per_channel_grad_factor_counts_elements_per_channel():
    fq = _calibrated(per_channel=True,
                     qscheme=dict(qdtype='quint8', bit=8, ch_axis=1))
    x = torch.randn(5, 3, 4)
    assert fq.grad_factor(x) == pytest.approx(1 / math.sqrt(20 * 255))
    no_scaling = _calibrated(use_grad_scaling=False)
    assert no_scaling.grad_factor(x) == 1.0
    fq(x).sum().backward()
    assert fq.scale.shape == fq.scale.grad.shape == (3, )


def test_per_channel_grads_match_between_scaled_and_unscaled():
    x = torch.randn(4, 6)
    grads = []
    for scaling in (True, False):
        fq = _calibrated(per_channel=True, use_grad_scaling=scaling)
        fq(x)
        fq.disable_observer()
        fq(x * 1.5).sum().backward()
        grads.append(fq.scale.grad)
    g = 1 / math.sqrt(6 * 7)
    torch.testing.assert_close(grads[0], grads[1] * g)


def test_lsq_plus_zero_point_gradient():
    fq = _calibrated(cls=LSQPlusFakeQuantize,
                     qscheme=dict(qdtype='quint8', bit=4))
    assert fq.zero_point_trainable
    fq(torch.rand(50) * 2 - 0.5)
    fq.disable_observer()
    assert isinstance(fq.zero_point, torch.nn.Parameter)
    x = torch.linspace(-3, 5, 40)
    fq(x).sum().backward()
    s, z = fq.scale.detach(), fq.zero_point.detach().round()
    q = torch.round(x / s) + z
    clipped = (q < 0) | (q > 15)
    assert clipped.any()
    g = 1 / math.sqrt(40 * 15)
    # LSQ+: dy/dz = -s where clipped, 0 inside.
    assert fq.zero_point.grad.item() == pytest.approx(
        (-s * clipped.sum() * g).item(), rel=1e-5)


def test_registered_aliases():
    assert MODELS.get('LSQFakeQuantize') is LearnableFakeQuantize
    assert MODELS.get('LearnableFakeQuantize') is LearnableFakeQuantize
    assert MODELS.get('LSQPlusFakeQuantize') is LSQPlusFakeQuantize


def test_scale_is_kept_positive_with_a_straight_through_gradient():
    fq = _calibrated()
    fq(torch.randn(16))
    fq.disable_observer()
    with torch.no_grad():
        fq.scale.fill_(-1.0)
    x = torch.full((4, ), 100.)
    y = fq(x)
    assert torch.isfinite(y).all()
    assert fq.get_qparams()[0].item() == fq.eps
    y.sum().backward()
    # Every value clips at qmax: y = (qmax - z) s, passed straight through
    # the clamp to the raw (negative) parameter.
    z = fq.zero_point.item()
    assert fq.scale.grad.item() == pytest.approx(
        4 * (7 - z) / math.sqrt(4 * 7), rel=1e-6)
    with pytest.raises(ValueError, match='eps must be > 0'):
        _calibrated(eps=0.)


def test_learning_moves_the_scale_towards_the_data():
    torch.manual_seed(0)
    fq = _calibrated(qscheme=dict(qdtype='qint8', bit=4))
    x = torch.randn(256)
    fq(x * 0.1)  # a much too small initial range
    fq.disable_observer()
    opt = torch.optim.SGD(fq.parameters(), lr=0.05)
    before = ((fq(x) - x)**2).mean().item()
    for _ in range(30):
        opt.zero_grad()
        ((fq(x) - x)**2).mean().backward()
        opt.step()
    assert ((fq(x) - x)**2).mean().item() < 0.5 * before


def test_two_forwards_before_backward_while_observing():
    fq = _calibrated()
    a, b = fq(torch.randn(8)), fq(torch.randn(8) * 3)
    (a.sum() + b.sum()).backward()  # no in-place version error
    assert fq.scale.grad is not None


def test_state_dict_resizes_per_channel_parameters():
    src = _calibrated(per_channel=True, cls=LSQPlusFakeQuantize)
    src(torch.randn(5, 3))
    dst = _calibrated(per_channel=True, cls=LSQPlusFakeQuantize)
    param = dst.scale
    dst.load_state_dict(src.state_dict())
    assert dst.scale is param and param.shape == (5, )
    torch.testing.assert_close(dst.scale, src.scale, atol=0, rtol=0)
    torch.testing.assert_close(dst.zero_point, src.zero_point, atol=0, rtol=0)


def test_get_qparams_rounds_a_learned_zero_point():
    fq = _calibrated(cls=LSQPlusFakeQuantize,
                     qscheme=dict(qdtype='quint8', bit=4))
    with pytest.raises(RuntimeError, match='LSQPlusFakeQuantize has no'):
        fq.get_qparams()
    fq(torch.randn(10))
    with torch.no_grad():
        fq.zero_point.fill_(20.4)
    assert fq.get_qparams()[1].item() == 15
    with torch.no_grad():
        fq.zero_point.fill_(3.6)
    zp = fq.get_qparams()[1]
    assert zp.item() == 4 and zp.dtype == torch.int32 and zp.shape == ()
