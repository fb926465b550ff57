"""The vectorised fast paths against ATen's fake-quant kernels, bit for bit.

ATen stays the reference: ``torch.fake_quantize_per_tensor_affine`` /
``..._per_channel_affine`` (values and straight-through gradient) and
``torch._fake_quantize_learnable_per_channel_affine`` (values; its qparam
gradients up to summation order).
"""
import pytest
import torch

from mmrazor_quant.models.fake_quants import (
    FakeQuantize,
    LearnableFakeQuantize,
)
from mmrazor_quant.models.fake_quants.functional import (
    fake_quantize,
    fake_quantize_learnable,
)
from mmrazor_quant.models.observers import (
    MovingAverageMinMaxObserver,
    PerChannelMinMaxObserver,
)
from mmrazor_quant.structures.quantization import QSchema

GRIDS = [(0, 255), (-128, 127), (-127, 127), (0, 15), (-8, 7), (0, 1),
         (-32768, 32767)]


def _case(seed, axis, qmin, qmax, tie_ratio=0.3):
    """Random data with outliers and exact ties, random qparams."""
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(4, 6, 5, 3, generator=gen) * 4
    n = 1 if axis is None else x.shape[axis]
    # Power-of-two scales make x * (1/s) exact, so the ties stay ties.
    exponent = torch.randint(-6, 1, (n, ), generator=gen)
    pot = torch.pow(2.0, exponent.float())
    scale = torch.where(torch.rand(n, generator=gen) < 0.5, pot,
                        pot * (1 + torch.rand(n, generator=gen)))
    zp = torch.randint(qmin, qmax + 1, (n, ), generator=gen,
                       dtype=torch.int32)
    shape = [1] * x.dim()
    if axis is not None:
        shape[axis] = n
    s = scale.reshape(shape)
    ties = (torch.randint(-300, 300, x.shape, generator=gen) + 0.5) * s
    x = torch.where(torch.rand(x.shape, generator=gen) < tie_ratio, ties,
                    x)
    if axis is None:
        scale, zp = scale.reshape(()), zp.reshape(())
    return x, scale, zp


def _aten(x, scale, zp, qmin, qmax, axis):
    if axis is None:
        return torch.fake_quantize_per_tensor_affine(x, scale, zp, qmin,
                                                     qmax)
    return torch.fake_quantize_per_channel_affine(x, scale, zp, axis, qmin,
                                                  qmax)


@pytest.mark.parametrize('axis', [None, 0, 1, 3])
@pytest.mark.parametrize('qmin,qmax', GRIDS)
def test_fake_quantize_equals_aten_values_and_gradient(axis, qmin, qmax):
    for seed in range(8):
        x, scale, zp = _case(seed, axis, qmin, qmax)
        ours_x = x.clone().requires_grad_()
        aten_x = x.clone().requires_grad_()
        upstream = torch.randn(x.shape)
        ours = fake_quantize(ours_x, scale, zp, qmin, qmax, axis)
        aten = _aten(aten_x, scale, zp, qmin, qmax, axis)
        assert torch.equal(ours, aten)
        ours.backward(upstream)
        aten.backward(upstream)
        assert torch.equal(ours_x.grad, aten_x.grad)


@pytest.mark.parametrize('axis', [None, 1])
@pytest.mark.parametrize('qmin,qmax', GRIDS)
def test_without_a_gradient_too(axis, qmin, qmax):
    """No gradient: the zero point goes into the clamp's bounds (the
    inference path, two passes fewer); the same values, infinities
    clipped and NaN kept as with a gradient."""
    for seed in range(8):
        x, scale, zp = _case(seed, axis, qmin, qmax)
        with torch.no_grad():
            ours = fake_quantize(x, scale, zp, qmin, qmax, axis)
        assert torch.equal(ours, _aten(x, scale, zp, qmin, qmax, axis))
        # (ATen's per-channel kernel sends +inf to quant_min)
        x[0, 0, 0] = torch.tensor([float('inf'), -float('inf'), 1e30])
        with torch.no_grad():
            ours = fake_quantize(x, scale, zp, qmin, qmax, axis)
        assert torch.equal(ours, fake_quantize(x.clone().requires_grad_(),
                                               scale, zp, qmin, qmax,
                                               axis).detach())
    x = torch.tensor([float('nan'), 2.0])
    with torch.no_grad():
        assert fake_quantize(x, torch.tensor(0.5), torch.tensor(
            3, dtype=torch.int32), 0, 15).isnan().tolist() == [True, False]


def test_fake_quantize_equals_aten_on_a_large_tensor():
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(1 << 20, generator=gen) * 3
    for scale, zp in [(0.02, 128), (0.0123, 0), (1 / 3, -5)]:
        s, z = torch.tensor(scale), torch.tensor(zp, dtype=torch.int32)
        assert torch.equal(fake_quantize(x, s, z, -128, 255),
                           _aten(x, s, z, -128, 255, None))


def test_infinities_clip_with_a_zero_gradient_as_aten():
    x = torch.tensor([float('inf'), -float('inf'), 1.0], requires_grad=True)
    ref = x.detach().clone().requires_grad_()
    s, z = torch.tensor(0.1), torch.tensor(3, dtype=torch.int32)
    ours = fake_quantize(x, s, z, 0, 15)
    aten = _aten(ref, s, z, 0, 15, None)
    assert torch.equal(ours, aten)
    ours.sum().backward()
    aten.sum().backward()
    assert torch.equal(x.grad, ref.grad)


def test_other_dtypes_and_traces_take_the_aten_op():
    x = torch.randn(3, 4, dtype=torch.float64)
    y = fake_quantize(x, 0.1, 2, 0, 15)
    assert y.dtype == torch.float64
    assert torch.equal(y, _aten(x, torch.tensor(0.1),
                                torch.tensor(2, dtype=torch.int32), 0, 15,
                                None))


@pytest.mark.parametrize('axis', [None, 0, 1])
@pytest.mark.parametrize('qmin,qmax', [(0, 255), (-128, 127), (-8, 7)])
def test_learnable_equals_aten(axis, qmin, qmax):
    for seed in range(4):
        # No ties: ATen's backward rounds z + x/s where its forward (and
        # ours) rounds x/s, then adds z; at ties of odd zero-points the
        # gradients differ by design.
        x, scale, zp = _case(seed, axis, qmin, qmax, tie_ratio=0)
        zp = zp.float() + 0.3  # a learned zero-point, rounded in forward
        upstream = torch.randn(x.shape)
        grads = []
        for fn in ('ours', 'aten'):
            xx = x.clone().requires_grad_()
            s = scale.clone().requires_grad_()
            z = zp.clone().requires_grad_()
            if fn == 'ours':
                y = fake_quantize_learnable(xx, s, z, qmin, qmax, axis, 0.1)
            elif axis is None:
                y = torch._fake_quantize_learnable_per_channel_affine(
                    xx.reshape(1, -1), s.reshape(1), z.reshape(1), 0, qmin,
                    qmax, 0.1).reshape(x.shape)
            else:
                y = torch._fake_quantize_learnable_per_channel_affine(
                    xx, s, z, axis, qmin, qmax, 0.1)
            y.backward(upstream)
            grads.append((y.detach(), xx.grad, s.grad, z.grad))
        (y0, gx0, gs0, gz0), (y1, gx1, gs1, gz1) = grads
        assert torch.equal(y0, y1)
        assert torch.equal(gx0, gx1)
        torch.testing.assert_close(gs0, gs1, atol=2e-3, rtol=1e-3)
        torch.testing.assert_close(gz0, gz1, atol=2e-3, rtol=1e-3)


def test_fake_quantize_module_equals_aten():
    gen = torch.Generator().manual_seed(1)
    act = FakeQuantize(MovingAverageMinMaxObserver(QSchema(qdtype='quint8')))
    weight = FakeQuantize(
        PerChannelMinMaxObserver(
            QSchema(qdtype='qint8', is_symmetry=True, is_per_channel=True)))
    for _ in range(3):
        x = torch.randn(8, 4, 5, 5, generator=gen) * 2
        w = torch.randn(6, 4, 3, 3, generator=gen)
        ya, yw = act(x), weight(w)
        assert torch.equal(
            ya, _aten(x, act.scale, act.zero_point, 0, 255, None))
        assert torch.equal(
            yw, _aten(w, weight.scale, weight.zero_point, -128, 127, 0))


def test_cached_flags_follow_every_write():
    fq = FakeQuantize(MovingAverageMinMaxObserver())
    x = torch.randn(10)
    assert fq.observer_on and fq.fake_quant_on and not fq.is_initialized
    fq(x)
    assert fq.is_initialized
    fq.observer_enabled.fill_(0)  # a direct in-place write
    assert not fq.observer_on
    scale = fq.scale.clone()
    fq(x * 10)
    assert torch.equal(fq.scale, scale)
    fq.observer_enabled[0] = 1
    assert fq.observer_on
    state = fq.state_dict()
    fresh = FakeQuantize(MovingAverageMinMaxObserver())
    fresh.fake_quant_enabled[0] = 0
    assert not fresh.fake_quant_on and not fresh.is_initialized
    fresh.load_state_dict(state)
    assert fresh.fake_quant_on and fresh.is_initialized
    fresh.observer_enabled = torch.tensor([0], dtype=torch.uint8)
    assert not fresh.observer_on


def test_learnable_module_matches_the_functional_form():
    fq = LearnableFakeQuantize(MovingAverageMinMaxObserver(
        QSchema(qdtype='quint8')))
    x = torch.randn(4, 8) * 3
    fq(x)
    fq.disable_observer()
    y = fq(x)
    expected = torch._fake_quantize_learnable_per_channel_affine(
        x.reshape(1, -1), fq.scale.detach().reshape(1),
        fq.zero_point.reshape(1), 0, 0, 255, 1.0).reshape(x.shape)
    assert torch.equal(y, expected)
