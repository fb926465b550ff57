"""fake_quantize / fake_quantize_learnable against the formula."""
import numpy as np
import pytest
import torch

from mmrazor_quant.models.fake_quants.functional import (
    fake_quantize,
    fake_quantize_learnable,
    round_half_away_from_zero,
)
from mmrazor_quant.structures.quantization import QSchema, RoundingPolicy
from .reference import fake_quant_ref, quantize_ref, shape_for

ROUNDINGS = ['half_even', 'half_away_from_zero']
BITS = [2, 4, 8, 16]


def _grid(bit, signed):
    return QSchema(qdtype='qint8' if signed else 'quint8', bit=bit).quant_range


def _qparams(x, axis, qmin, qmax, gen):
    """Grids spanning under 80% of the data, so some values clip; random
    zero-points."""
    n = 1 if axis is None else x.shape[axis]
    x = x.detach()
    amax = x.abs().amax() if axis is None else x.abs().movedim(
        axis, 0).flatten(1).amax(1)
    scale = (amax * 1.6 / (qmax - qmin)).float() * (
        0.2 + 0.3 * torch.rand(n, generator=gen)).reshape(amax.shape)
    zp = torch.randint(qmin, qmax + 1, (n, ), generator=gen,
                       dtype=torch.int32).reshape(amax.shape)
    return scale, zp


@pytest.mark.parametrize('rounding', ROUNDINGS)
@pytest.mark.parametrize('bit', BITS)
@pytest.mark.parametrize('signed', [False, True])
@pytest.mark.parametrize('axis', [None, 0, 1])
def test_fake_quantize_matches_formula(rounding, bit, signed, axis):
    gen = torch.Generator().manual_seed(bit * 10 + signed)
    qmin, qmax = _grid(bit, signed)
    x = torch.randn(6, 5, 4, generator=gen) * 3
    scale, zp = _qparams(x, axis, qmin, qmax, gen)
    y = fake_quantize(x, scale, zp, qmin, qmax, axis, rounding)
    expected = fake_quant_ref(x, scale, zp, qmin, qmax, axis, rounding)
    torch.testing.assert_close(y, expected, atol=0, rtol=0)
    q, _, _ = quantize_ref(x, scale, zp, qmin, qmax, axis, rounding)
    assert ((q < qmin) | (q > qmax)).any()  # the clamp is exercised
    assert ((q >= qmin) & (q <= qmax)).any()


@pytest.mark.parametrize('axis', [None, 0, 1])
def test_rounding_policies_differ_exactly_at_ties(axis):
    scale = 0.25  # a power of two: x * (1/s) is exact
    k = torch.arange(-6, 6, dtype=torch.float32)
    v = (k + 0.5).reshape(3, 4)  # every value is a tie
    x = v * scale
    n = 1 if axis is None else x.shape[axis]
    s = torch.full((n, ), scale) if axis is not None else torch.tensor(scale)
    z = torch.zeros_like(s, dtype=torch.int32)
    even = fake_quantize(x, s, z, -128, 127, axis, 'half_even')
    away = fake_quantize(x, s, z, -128, 127, axis,
                         RoundingPolicy.HALF_AWAY_FROM_ZERO)
    torch.testing.assert_close(even / scale, torch.round(v), atol=0, rtol=0)
    torch.testing.assert_close(away / scale,
                               torch.sign(v) * torch.floor(v.abs() + 0.5),
                               atol=0, rtol=0)
    # They differ exactly where the lower neighbour |v| - 0.5 is even.
    differs = (v.abs() - 0.5) % 2 == 0
    assert differs.any() and (~differs).any()
    assert torch.equal(even != away, differs)
    assert ((away - even).abs()[differs] == scale).all()


def test_round_half_away_from_zero_is_exact_below_half():
    below_half = torch.nextafter(torch.tensor(0.5), torch.tensor(0.))
    v = torch.stack([below_half, -below_half, torch.tensor(2.5),
                     torch.tensor(-2.5), torch.tensor(-0.0)])
    # floor(0.49999997 + 0.5) would give 1: the float sum rounds up.
    assert torch.floor(below_half + 0.5) == 1
    assert round_half_away_from_zero(v).tolist() == [0., 0., 3., -3., 0.]


@pytest.mark.parametrize('rounding', ROUNDINGS)
@pytest.mark.parametrize('axis', [None, 1])
def test_straight_through_gradient_mask(rounding, axis):
    gen = torch.Generator().manual_seed(0)
    x = (torch.randn(8, 3, generator=gen) * 4).requires_grad_()
    scale = torch.tensor(0.5) if axis is None else torch.tensor(
        [0.5, 0.25, 1.0])
    zp = torch.tensor(3, dtype=torch.int32) if axis is None else torch.tensor(
        [3, 0, 15], dtype=torch.int32)
    upstream = torch.randn(8, 3, generator=gen)
    fake_quantize(x, scale, zp, 0, 15, axis, rounding).backward(upstream)
    q, _, _ = quantize_ref(x, scale, zp, 0, 15, axis, rounding)
    inside = torch.from_numpy((q >= 0) & (q <= 15))
    assert inside.any() and (~inside).any()
    torch.testing.assert_close(x.grad, upstream * inside, atol=0, rtol=0)


def test_scalar_qparams_and_negative_axis():
    x = torch.randn(2, 3, 4)
    y = fake_quantize(x, 0.1, 0, -8, 7)
    expected = fake_quant_ref(x, torch.tensor(0.1), torch.tensor(0), -8, 7)
    torch.testing.assert_close(y, expected, atol=0, rtol=0)
    s = torch.tensor([0.1, 0.2, 0.3, 0.4])
    z = torch.tensor([0, 1, 2, 3], dtype=torch.int32)
    torch.testing.assert_close(
        fake_quantize(x, s, z, -8, 7, ch_axis=-1),
        fake_quantize(x, s, z, -8, 7, ch_axis=2), atol=0, rtol=0)


def test_float_zero_point_is_rounded_and_clamped():
    x = torch.linspace(-2, 2, 11)
    y = fake_quantize(x, 0.1, torch.tensor(2.6), 0, 15)
    expected = fake_quant_ref(x, torch.tensor(0.1), torch.tensor(3), 0, 15)
    torch.testing.assert_close(y, expected, atol=0, rtol=0)


def test_bad_arguments_are_named():
    x = torch.randn(2, 3)
    with pytest.raises(ValueError, match=r'quant_min \(5\) must be <= '):
        fake_quantize(x, 0.1, 0, 5, 4)
    with pytest.raises(ValueError, match='ch_axis=2 is out of range'):
        fake_quantize(x, torch.ones(3), torch.zeros(3), 0, 15, ch_axis=2)
    with pytest.raises(ValueError, match='have 2 channels but the tensor'):
        fake_quantize(x, torch.ones(2), torch.zeros(2), 0, 15, ch_axis=1)
    with pytest.raises(ValueError, match='needs one scale and one zero'):
        fake_quantize(x, torch.ones(3), torch.zeros(3), 0, 15)
    with pytest.raises(ValueError, match='is not a valid RoundingPolicy'):
        fake_quantize(x, 0.1, 0, 0, 15, rounding='up')


# -- LSQ / LSQ+ ---------------------------------------------------------


def _lsq_grads(x, scale, zp, qmin, qmax, axis, rounding, grad_factor,
               upstream):
    """The paper's gradients, summed per channel."""
    z_int = zp.detach().round()
    q, r, v = quantize_ref(x, scale, z_int, qmin, qmax, axis, rounding)
    shape = shape_for(x, axis)
    s = scale.detach().numpy().astype(np.float64).reshape(shape)
    z = z_int.numpy().astype(np.float64).reshape(shape)
    g = upstream.numpy().astype(np.float64)
    d_s = np.where(q < qmin, qmin - z, np.where(q > qmax, qmax - z, r - v))
    d_z = np.where((q < qmin) | (q > qmax), -s, 0.)
    dims = tuple(i for i in range(x.dim()) if axis is None or i != axis)
    grad_s = (g * d_s).sum(axis=dims) * grad_factor
    grad_z = (g * d_z).sum(axis=dims) * grad_factor
    inside = (q >= qmin) & (q <= qmax)
    return (torch.from_numpy(np.asarray(grad_s)).float().reshape(scale.shape),
            torch.from_numpy(np.asarray(grad_z)).float().reshape(scale.shape),
            torch.from_numpy(g * inside).float())


@pytest.mark.parametrize('rounding', ROUNDINGS)
@pytest.mark.parametrize('axis', [None, 0, 1])
@pytest.mark.parametrize('bit,signed', [(4, True), (8, False), (2, False)])
def test_learnable_gradients_match_lsq_formulas(rounding, axis, bit, signed):
    gen = torch.Generator().manual_seed(bit)
    qmin, qmax = _grid(bit, signed)
    x = (torch.randn(5, 4, 3, generator=gen) * 2).requires_grad_()
    scale, zp = _qparams(x, axis, qmin, qmax, gen)
    scale.requires_grad_()
    zp = zp.float().add(0.3).requires_grad_()  # a learned, non-integer zp
    upstream = torch.randn(x.shape, generator=gen)
    y = fake_quantize_learnable(x, scale, zp, qmin, qmax, axis, 0.37,
                                rounding)
    y.backward(upstream)
    z_int = zp.detach().round().int()
    torch.testing.assert_close(
        y, fake_quant_ref(x, scale, z_int, qmin, qmax, axis, rounding),
        atol=0, rtol=0)
    grad_s, grad_z, grad_x = _lsq_grads(x, scale, zp, qmin, qmax, axis,
                                        rounding, 0.37, upstream)
    torch.testing.assert_close(x.grad, grad_x, atol=0, rtol=0)
    torch.testing.assert_close(scale.grad, grad_s, atol=1e-4, rtol=1e-4)
    torch.testing.assert_close(zp.grad, grad_z, atol=1e-5, rtol=1e-5)
    assert scale.grad.shape == scale.shape and zp.grad.shape == zp.shape


@pytest.mark.parametrize('rounding', ROUNDINGS)
@pytest.mark.parametrize('z', [0.0, -2.0, 2.5])
def test_learnable_gradients_on_a_hand_worked_example(rounding, z):
    """s = 0.5, grid [-4, 3]: x / s = [-10, -1.2, 0.7, 9]; the extremes
    clip. Negative and half-way zero-points are where ATen's per-tensor
    learnable backward disagrees with its forward."""
    x = torch.tensor([-5.0, -0.6, 0.35, 4.5])
    scale = torch.tensor(0.5, requires_grad=True)
    zp = torch.tensor(z, requires_grad=True)
    fake_quantize_learnable(x, scale, zp, -4, 3, None, 1.0,
                            rounding).sum().backward()
    z_int = round(z)  # half-even, as the forward: 2.5 -> 2
    # (qmin - z) + (round(-1.2) + 1.2) + (round(0.7) - 0.7) + (qmax - z)
    expected = (-4 - z_int) + 0.2 + 0.3 + (3 - z_int)
    assert scale.grad.item() == pytest.approx(expected, abs=1e-6)
    # -s for each of the two clipped values
    assert zp.grad.item() == pytest.approx(-1.0, abs=1e-7)


@pytest.mark.parametrize('rounding', ROUNDINGS)
def test_learnable_scale_gradient_vs_finite_differences(rounding):
    """Where clipped, ``y = (qmax - z) s`` is linear in ``s`` and LSQ's
    gradient is the true derivative. Inside, ``y = round(x / s) s`` has the
    derivative ``round(v)`` while rounding is locally constant; LSQ's
    ``round(v) - v`` differs by exactly the straight-through term ``v``."""
    x = torch.tensor([-7.0, -0.61, 0.33, 0.4, 5.5], dtype=torch.float32)
    s0, z, h = 0.25, 1.0, 1e-3
    zp = torch.tensor(z)

    def total(s):
        return fake_quantize_learnable(x, s, zp, -4, 3, None, 1.0,
                                       rounding)

    scale = torch.tensor(s0, requires_grad=True)
    per_elem = []
    for i in range(len(x)):
        scale.grad = None
        total(scale)[i].backward()
        per_elem.append(scale.grad.item())
    fd = (total(torch.tensor(s0 + h)) - total(torch.tensor(s0 - h))) / (2 * h)
    v = x / s0
    clipped = ((torch.round(v) + z) < -4) | ((torch.round(v) + z) > 3)
    assert clipped.tolist() == [True, False, False, False, True]
    for i in range(len(x)):
        if clipped[i]:
            assert per_elem[i] == pytest.approx(fd[i].item(), abs=1e-3)
        else:
            assert per_elem[i] + v[i].item() == pytest.approx(
                fd[i].item(), abs=1e-3)


def test_learnable_gradient_reaches_a_0d_scale():
    scale = torch.tensor(0.1, requires_grad=True)
    y = fake_quantize_learnable(torch.randn(10), scale, torch.tensor(0.), -8,
                                7)
    y.sum().backward()
    assert scale.grad.shape == () and torch.isfinite(scale.grad)
