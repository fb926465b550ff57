"""MSE search and LSQ / LSQ+ initialisation observers."""
import math

import pytest
import torch

from mmrazor_quant.models.observers import (
    LSQObserver,
    LSQPerChannelObserver,
    LSQPlusObserver,
    LSQPlusPerChannelObserver,
    MSEObserver,
    PerChannelMSEObserver,
)
from mmrazor_quant.structures.quantization import QSchema

INT4_SYM = dict(qdtype='qint8', bit=4, is_symmetry=True,
                is_symmetric_range=True)


def randn(*shape, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


def brute_force_alpha(x, qmin, qmax, p=2.0, k=100):
    """Symmetric-signed reference with torch's ATen fake quant."""
    amax = x.abs().max().item()
    errs = []
    for i in range(k, 0, -1):
        scale = i / k * amax / ((qmax - qmin) / 2)
        xq = torch.fake_quantize_per_tensor_affine(x, scale, 0, qmin, qmax)
        errs.append((float(((xq - x).abs()**p).sum()), i / k))
    return min(errs, key=lambda e: e[0])[1]


@pytest.mark.parametrize('p', [2.0, 1.0])
def test_mse_matches_brute_force(p):
    x = randn(4000)
    obs = MSEObserver(QSchema(**INT4_SYM), p=p)
    obs(x)
    alpha = brute_force_alpha(x, -7, 7, p)
    assert obs.max_val.item() == pytest.approx(alpha * x.max().item(),
                                               rel=1e-6)
    assert obs.min_val.item() == pytest.approx(alpha * x.min().item(),
                                               rel=1e-6)


def test_mse_clips_one_huge_outlier():
    x = randn(10000)
    x[0] = 100.0
    obs = MSEObserver(QSchema(**INT4_SYM))
    obs(x)
    assert obs.max_val.item() < 0.1 * 100.0
    s, z = obs.calculate_qparams()
    assert s.item() == pytest.approx(
        max(obs.max_val.item(), -obs.min_val.item()) / 7, rel=1e-6)
    assert z.item() == 0


@pytest.mark.parametrize('ch_axis', [0, 1])
def test_per_channel_mse_searches_each_channel(ch_axis):
    w = randn(3, 4, 500).movedim(0, ch_axis).contiguous()
    obs = PerChannelMSEObserver(QSchema(**INT4_SYM, ch_axis=ch_axis))
    obs(w)
    rows = w.movedim(ch_axis, 0).reshape(w.shape[ch_axis], -1)
    expected = [brute_force_alpha(r, -7, 7) * r.max().item() for r in rows]
    torch.testing.assert_close(obs.max_val, torch.tensor(expected))
    assert obs.calculate_qparams()[0].shape == (w.shape[ch_axis], )


def test_mse_running_extremes_over_batches():
    obs = MSEObserver(QSchema(**INT4_SYM))
    a, b = randn(2000, seed=1), randn(2000, seed=2) * 3
    obs(a)
    first = obs.max_val.item()
    obs(b)
    assert obs.max_val.item() == pytest.approx(
        max(first, brute_force_alpha(b, -7, 7) * b.max().item()), rel=1e-6)


LSQ_X = torch.tensor([[-1.0, 0.5], [3.0, 0.5]])  # mean |x| = 1.25


@pytest.mark.parametrize(
    'scheme, scale, zero_point',
    [
        # signed symmetric: 2 * 1.25 / sqrt(127), zp 0
        (dict(qdtype='qint8', is_symmetry=True), 2.5 / math.sqrt(127), 0),
        # 4-bit [-7, 7]: 2 * 1.25 / sqrt(7)
        (INT4_SYM, 2.5 / math.sqrt(7), 0),
        # asymmetric quint8: zp of calculate_qparams(-1, 3) = 64
        (dict(), 2.5 / math.sqrt(255), 64),
        # unsigned symmetric with negatives: zp 128
        (dict(is_symmetry=True), 2.5 / math.sqrt(255), 128),
        # pot: 2.5 / sqrt(127) = 0.2218 -> 0.25
        (dict(qdtype='qint8', is_symmetry=True, is_pot_scale=True), 0.25, 0),
    ])
def test_lsq_init_formula(scheme, scale, zero_point):
    obs = LSQObserver(QSchema(**scheme))
    obs(LSQ_X)
    s, z = obs.calculate_qparams()
    assert s.dtype == torch.float32 and z.dtype == torch.int32
    assert s.item() == pytest.approx(scale, rel=1e-6)
    assert z.item() == zero_point


def test_lsq_non_negative_unsigned_uses_quant_min():
    obs = LSQObserver(QSchema(is_symmetry=True))
    obs(torch.tensor([0.0, 1.0, 2.0]))  # mean |x| = 1
    s, z = obs.calculate_qparams()
    assert s.item() == pytest.approx(2 / math.sqrt(255), rel=1e-6)
    assert z.item() == 0


def test_lsq_mean_over_all_batches():
    obs = LSQObserver(QSchema(qdtype='qint8', is_symmetry=True))
    obs(torch.tensor([1.0, -1.0]))
    obs(torch.tensor([4.0, -4.0, 4.0, 4.0]))  # mean |x| = 18 / 6 = 3
    s, _ = obs.calculate_qparams()
    assert s.item() == pytest.approx(6 / math.sqrt(127), rel=1e-6)


@pytest.mark.parametrize('ch_axis', [0, 1])
def test_lsq_per_channel(ch_axis):
    x = randn(3, 5, 7)
    obs = LSQPerChannelObserver(
        QSchema(qdtype='qint8', is_symmetry=True, ch_axis=ch_axis))
    obs(x)
    dims = [d for d in range(3) if d != ch_axis]
    expected = 2 * x.abs().mean(dims) / math.sqrt(127)
    s, z = obs.calculate_qparams()
    torch.testing.assert_close(s, expected)
    assert z.tolist() == [0] * x.shape[ch_axis]


def test_lsq_plus_init_formula():
    x = randn(5000)
    x[0], x[1] = 40.0, -0.5 * 40.0
    obs = LSQPlusObserver(QSchema(), k=3.0)
    obs(x[:2500])
    obs(x[2500:])
    mu, sigma = x.double().mean(), x.double().std(unbiased=False)
    lo, hi = (mu - 3 * sigma).item(), (mu + 3 * sigma).item()
    s, z = obs.calculate_qparams()
    assert s.item() == pytest.approx((hi - lo) / 255, rel=1e-5)
    assert z.item() == round(-lo / ((hi - lo) / 255))


def test_lsq_plus_keeps_min_max_bounds():
    # k sigma beyond the data: the range is the data's [min, max]
    obs = LSQPlusPerChannelObserver(QSchema(qdtype='qint8', ch_axis=0), k=10)
    obs(torch.tensor([[-1.0, 3.0, 0.0], [0.0, 2.0, 1.0]]))
    s, z = obs.calculate_qparams()
    # [-1, 3]: 4 / 255, -128 + round(63.75); [0, 2]: 2 / 255, -128
    torch.testing.assert_close(s, torch.tensor([4 / 255, 2 / 255]))
    assert z.tolist() == [-64, -128]
    with pytest.raises(ValueError, match=r'k must be > 0'):
        LSQPlusObserver(k=0)
