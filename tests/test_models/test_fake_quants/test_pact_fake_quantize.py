"""PACTFakeQuantize."""
import pytest
import torch

from mmrazor_quant.models.fake_quants import PACTFakeQuantize
from .helpers import observer


def test_forward_is_the_formula_on_clip_x_0_alpha():
    fq = PACTFakeQuantize(observer(qdtype='quint8', bit=2), init_alpha=3.0)
    assert fq.is_initialized
    x = torch.tensor([-1., 0.4, 0.6, 1.2, 2.9, 5.])
    # s = alpha / 3 = 1: round(clip(x, 0, 3)) * 1
    assert fq(x).tolist() == [0., 0., 1., 1., 3., 3.]


def test_gradients_are_the_papers_straight_through_estimates():
    fq = PACTFakeQuantize(observer(qdtype='quint8', bit=4), init_alpha=2.0)
    x = torch.tensor([-1., 0., 0.7, 1.99, 2.0, 3.5]).requires_grad_()
    upstream = torch.tensor([1., 2., 3., 4., 5., 6.])
    fq(x).backward(upstream)
    # dy/dx = 1 on [0, alpha), dy/dalpha = 1 where x >= alpha.
    assert x.grad.tolist() == [0., 2., 3., 4., 0., 0.]
    assert fq.alpha.grad.item() == 5. + 6.


def test_alpha_gradient_vs_finite_differences_where_clipped():
    fq = PACTFakeQuantize(observer(qdtype='quint8', bit=8), init_alpha=1.5)
    x = torch.tensor([1.7, 2.0, 9.0])  # all >= alpha: y = alpha
    fq(x).sum().backward()
    h = 1e-3
    plus = PACTFakeQuantize(observer(qdtype='quint8'), init_alpha=1.5 + h)
    minus = PACTFakeQuantize(observer(qdtype='quint8'), init_alpha=1.5 - h)
    fd = (plus(x).sum() - minus(x).sum()) / (2 * h)
    assert fq.alpha.grad.item() == pytest.approx(fd.item(), rel=1e-3)


def test_alpha_from_the_observer_when_init_alpha_is_none():
    fq = PACTFakeQuantize(observer(qdtype='quint8', bit=8), init_alpha=None)
    assert not fq.is_initialized
    with pytest.raises(RuntimeError, match='PACTFakeQuantize has no qparams'):
        fq.get_qparams()
    fq(torch.tensor([0., 1., 4.25]))
    assert fq.alpha.item() == pytest.approx(4.25) and fq.is_initialized
    scale, zp = fq.get_qparams()
    assert scale.item() == pytest.approx(4.25 / 255) and zp.item() == 0
    # A fixed init_alpha is not overwritten by the observer.
    fixed = PACTFakeQuantize(observer(qdtype='quint8'), init_alpha=6.)
    fixed(torch.tensor([0., 1.]))
    assert fixed.alpha.item() == 6. and fixed.observer.max_val.item() == 1.


def test_signed_and_per_channel_schemes_are_rejected():
    with pytest.raises(ValueError, match="needs an unsigned scheme"):
        PACTFakeQuantize(observer(qdtype='qint8'))
    with pytest.raises(ValueError, match='needs a per-tensor scheme'):
        PACTFakeQuantize(observer(per_channel=True))
    with pytest.raises(ValueError, match='init_alpha must be > 0'):
        PACTFakeQuantize(observer(), init_alpha=0.)


def test_alpha_is_learned():
    torch.manual_seed(0)
    fq = PACTFakeQuantize(observer(qdtype='quint8', bit=4), init_alpha=0.5)
    x = torch.rand(512) * 3
    opt = torch.optim.SGD(fq.parameters(), lr=0.1)
    for _ in range(40):
        opt.zero_grad()
        ((fq(x) - x)**2).mean().backward()
        opt.step()
    assert 2.0 < fq.alpha.item() < 3.2  # up from 0.5, towards max(x) = 3
