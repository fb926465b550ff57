"""Histogram (percentile / MSE) and KL observers."""
import math

import pytest
import torch

from mmrazor_quant.models.observers import (
    HistogramMSEObserver,
    HistogramObserver,
    KLObserver,
    MinMaxObserver,
    MSEObserver,
    PercentileObserver,
)
from mmrazor_quant.models.observers.base import flat_in_memory_order
from mmrazor_quant.models.observers.histogram_base import rebin_histogram
from mmrazor_quant.models.observers.kl import kl_threshold_bins
from mmrazor_quant.registry import MODELS
from mmrazor_quant.structures.quantization import QSchema

INT4_SYM = QSchema(qdtype='qint8', bit=4, is_symmetry=True,
                   is_symmetric_range=True)


def outlier_data(n=20000, outlier=100.0):
    x = torch.randn(n, generator=torch.Generator().manual_seed(0))
    x[0] = outlier
    return x


def test_percentile_non_negative_uniform():
    obs = HistogramObserver(bins=1000, percentile=99.0)
    obs(torch.linspace(0, 1, 100001))
    lo, hi = obs.clip_range()
    assert lo.item() == 0.0  # non-negative data keeps its minimum
    assert hi.item() == pytest.approx(0.99, abs=1e-3)
    s, z = obs.calculate_qparams()
    assert s.item() == pytest.approx(0.99 / 255, rel=2e-3) and z.item() == 0


def test_percentile_signed_uses_both_tails():
    obs = PercentileObserver(QSchema(qdtype='qint8', is_symmetry=True),
                             bins=2000, percentile=99.0)
    obs(torch.linspace(-1, 1, 200001))
    lo, hi = obs.clip_range()
    # F^-1(0.01) = -0.98 and F^-1(0.99) = 0.98 on U(-1, 1)
    assert lo.item() == pytest.approx(-0.98, abs=1e-3)
    assert hi.item() == pytest.approx(0.98, abs=1e-3)
    s, _ = obs.calculate_qparams()
    assert s.item() == pytest.approx(0.98 / 127.5, rel=2e-3)


def test_percentile_on_gaussian():
    x = torch.randn(200000, generator=torch.Generator().manual_seed(1))
    obs = HistogramObserver(bins=2048, percentile=99.0)
    obs(x)
    lo, hi = obs.clip_range()
    # N(0, 1): quantiles at +-2.3263 (empirical tolerance ~0.02)
    assert hi.item() == pytest.approx(2.3263, abs=0.03)
    assert lo.item() == pytest.approx(-2.3263, abs=0.03)


def test_histogram_grows_and_rebins():
    gen = torch.Generator().manual_seed(0)
    a, b = torch.rand(5000, generator=gen), torch.rand(5000, generator=gen) * 2
    b[0] = 2.0  # the union's range is exactly [0, 2]
    a[0] = 0.0
    obs = HistogramObserver(bins=64)
    obs(a)
    obs(b)
    assert obs.hist_min.item() == 0.0 and obs.hist_max.item() == 2.0
    assert obs.histogram.sum().item() == 10000  # counts preserved
    # [0, 1] -> [0, 2] merges pairs of bins exactly: matches one histc.
    direct = torch.histc(torch.cat([a, b]), 64, 0, 2).double()
    assert (obs.histogram - direct).abs().max().item() <= 2


def test_rebin_splits_proportionally():
    hist = torch.tensor([4.0, 8.0], dtype=torch.float64)  # over [0, 2]
    # onto [0, 4]: [0, 2] -> 4 + 8, [2, 4] -> 0
    assert rebin_histogram(hist, 0, 2, 0, 4).tolist() == [12.0, 0.0]
    # onto [-1, 3]: [-1, 1] -> 4 (half of nothing + bin 0), [1, 3] -> 8
    assert rebin_histogram(hist, 0, 2, -1, 3).tolist() == [4.0, 8.0]
    # onto [0, 3] (edge at 1.5): 4 + 8 * 0.5, then 8 * 0.5
    assert rebin_histogram(hist, 0, 2, 0, 3).tolist() == [8.0, 4.0]


def test_constant_input_gives_valid_qparams():
    obs = HistogramObserver(bins=16)
    obs(torch.full((10, ), 2.0))
    s, z = obs.calculate_qparams()
    assert s.item() == pytest.approx(2.0 / 255, rel=1e-5) and z.item() == 0


def brute_force_mse_alpha(centres, counts, amin, amax, scheme, k=100):
    """Straightforward reference with torch's ATen fake quant."""
    best, best_err = None, math.inf
    qmin, qmax = scheme.quant_range
    for i in range(k, 0, -1):
        a = i / k
        amax_c = max(-a * amin, a * amax)
        scale = amax_c / ((qmax - qmin) / 2)
        xq = torch.fake_quantize_per_tensor_affine(centres, scale, 0, qmin,
                                                   qmax)
        err = float((counts * (xq - centres)**2).sum())
        if err < best_err:
            best, best_err = a, err
    return best


def test_histogram_mse_matches_brute_force_and_clips_outlier():
    x = outlier_data()
    obs = HistogramMSEObserver(INT4_SYM, bins=512)
    obs(x)
    lo, hi = obs.clip_range()
    edges = obs.bin_edges().float()
    centres = (edges[:-1] + edges[1:]) / 2
    alpha = brute_force_mse_alpha(centres, obs.histogram.float(),
                                  obs.min_val.item(), obs.max_val.item(),
                                  INT4_SYM)
    assert hi.item() == pytest.approx(alpha * 100.0, rel=1e-5)
    assert hi.item() < 0.1 * 100.0  # the outlier is clipped away


def reference_kl(hist, nq):
    """TensorRT's entropy calibration, written plainly with loops."""
    hist = hist.tolist()
    best_i, best_kl = None, math.inf
    for i in range(nq, len(hist) + 1):
        ref = hist[:i]
        p = list(ref)
        p[-1] += sum(hist[i:])
        merged = i // nq
        q = [0.0] * i
        for g in range(nq):
            start = g * merged
            stop = i if g == nq - 1 else start + merged
            total = sum(ref[start:stop])
            nonzero = [j for j in range(start, stop) if p[j] > 0]
            for j in nonzero:
                q[j] = total / len(nonzero)
        ps, qs = sum(p), sum(q)
        kl = sum(pj / ps * math.log((pj / ps) / max(qj / qs, 1e-12))
                 for pj, qj in zip(p, q) if pj > 0)
        if kl < best_kl - 1e-12:
            best_i, best_kl = i, kl
    return best_i


@pytest.mark.parametrize('seed', [0, 1, 2])
def test_kl_threshold_matches_reference(seed):
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(3000, generator=gen).abs()
    x[:3] = torch.tensor([9.0, 12.0, 15.0])
    hist = torch.histc(x, 96, 0, float(x.max())).double()
    assert kl_threshold_bins(hist, 8) == reference_kl(hist, 8)
    assert kl_threshold_bins(hist, 200) == 96  # more levels than bins


def test_kl_observer_clips_outlier():
    obs = KLObserver(QSchema(qdtype='qint8', is_symmetry=True), bins=2048)
    obs(outlier_data(n=50000))
    lo, hi = obs.clip_range()
    assert obs.num_levels() == 128
    assert 2.0 < hi.item() < 20.0
    # the low side is -T, but never beyond the data's minimum
    assert lo.item() == max(obs.min_val.item(), -hi.item())
    s, z = obs.calculate_qparams()
    assert s.item() == pytest.approx(hi.item() / 127.5, rel=1e-6)
    assert z.item() == 0


def test_kl_levels_follow_the_scheme():
    relu = torch.rand(100)
    obs = KLObserver(QSchema(qdtype='quint8'), bins=64)
    obs(relu)
    assert obs.num_levels() == 256  # one-sided data, unsigned: all levels
    # 256 levels > 64 bins: no clipping, the max is kept
    assert obs.clip_range()[1].item() == pytest.approx(relu.max().item())
    obs = KLObserver(QSchema(qdtype='qint8', bit=4, is_symmetry=True))
    obs(relu - 0.5)
    assert obs.num_levels() == 8


def test_invalid_arguments():
    with pytest.raises(ValueError, match=r"method must be one of"):
        HistogramObserver(method='entropy')
    with pytest.raises(ValueError, match=r'percentile must be in \(50, 100\]'):
        HistogramObserver(percentile=120)
    with pytest.raises(ValueError, match=r'bins must be an int >= 2'):
        KLObserver(bins=1)
    assert isinstance(MODELS.build(dict(type='mmrazor_quant.KLObserver')),
                      KLObserver)


def test_max_binned_at_or_above_the_batch_bins_every_value():
    x = outlier_data()
    exact, capped = HistogramMSEObserver(), HistogramMSEObserver(
        max_binned=x.numel())
    exact(x)
    capped(x)
    assert torch.equal(exact.histogram, capped.histogram)


@pytest.mark.parametrize('cls', [HistogramMSEObserver, KLObserver])
def test_max_binned_samples_the_counts_not_the_range(cls):
    """A sampled batch: extremes and range from every value, counts weighted
    to the batch's size, each bin within sampling error of the full count,
    the MSE range within 1 % of the exact one (KL's threshold hangs on a
    few tail bins: not compared); seeded, so repeatable."""
    torch.manual_seed(1)
    # heavy-tailed, like a trained network's activations
    x = torch.distributions.StudentT(3.).sample((2**20, ))
    exact = cls(bins=256)
    exact(x)
    runs = []
    for _ in range(2):
        sampled = cls(bins=256, max_binned=2**16)
        sampled(x)
        runs.append(sampled)
    sampled = runs[0]
    assert torch.equal(runs[0].histogram, runs[1].histogram)
    assert sampled.max_val.item() == x.max().item() == exact.max_val.item()
    assert sampled.hist_max.item() == exact.hist_max.item()
    assert sampled.histogram.sum().item() == pytest.approx(2**20)
    # a bin holding n of the 2**16 sampled values deviates by ~sqrt(n)
    full, estimate = exact.histogram, sampled.histogram
    busy = full > 2**20 / 64
    sampled_counts = full[busy] / 16
    assert ((estimate[busy] - full[busy]).abs() / 16 <
            5 * sampled_counts.sqrt()).all()
    if cls is KLObserver:
        return
    lo_e, hi_e = exact.clip_range()
    lo_s, hi_s = sampled.clip_range()
    assert hi_s.item() == pytest.approx(hi_e.item(), rel=0.01)
    assert lo_s.item() == pytest.approx(lo_e.item(), rel=0.01)


@pytest.mark.parametrize('bad', [0, -1, 2.5, True])
def test_max_binned_must_be_a_positive_int(bad):
    with pytest.raises(ValueError, match='max_binned'):
        HistogramMSEObserver(max_binned=bad)


@pytest.mark.parametrize('cls', [HistogramMSEObserver, MinMaxObserver])
def test_a_channels_last_batch_is_observed_as_its_contiguous_copy(cls):
    """Extremes and counts read a channels-last activation in memory order
    (no copy): the same buffers and qparams as the contiguous tensor."""
    torch.manual_seed(0)
    x = torch.distributions.StudentT(3.).sample((2, 8, 5, 7))
    strided = x.to(memory_format=torch.channels_last)
    assert not strided.is_contiguous()
    plain, permuted = cls(), cls()
    plain(x)
    permuted(strided)
    for name, buf in plain.named_buffers():
        assert torch.equal(buf, dict(permuted.named_buffers())[name]), name
    assert torch.equal(torch.stack(plain.calculate_qparams()),
                       torch.stack(permuted.calculate_qparams()))


def test_a_sampled_channels_last_batch_bins_the_row_major_draw():
    """A sampled batch bins the values at the seeded row-major positions
    ``x.reshape(-1)[randint(...)]`` whatever the layout: the histogram of
    two channels-last batches equals that of the same draws from their
    row-major copies, and is ``numel / max_binned`` times their counts."""
    torch.manual_seed(0)
    batches = [torch.randn(2, 16, 24, 24) * s for s in (1., 3.)]
    sampled = HistogramMSEObserver(bins=64, max_binned=2**12)
    for x in batches:
        sampled(x.to(memory_format=torch.channels_last))
    generator = torch.Generator().manual_seed(0)
    draws = [x.reshape(-1)[torch.randint(x.numel(), (2**12, ),
                                         generator=generator)]
             for x in batches]
    weight = batches[0].numel() / 2**12
    lo, hi = sampled.hist_min.item(), sampled.hist_max.item()
    assert lo == min(x.min().item() for x in batches)
    # both batches binned over the final range (the second batch widens
    # it, so the first batch's counts were re-binned: compare the second)
    second = torch.histc(draws[1], 64, lo, hi).double() * weight
    first = sampled.histogram - second
    assert first.sum().item() == pytest.approx(2**12 * weight)
    assert torch.equal(sampled.histogram, first + second)
    single = HistogramMSEObserver(bins=64, max_binned=2**12)
    single(batches[0].to(memory_format=torch.channels_last))
    assert torch.equal(
        single.histogram,
        torch.histc(draws[0], 64, single.hist_min.item(),
                    single.hist_max.item()).double() * weight)


def test_order_dependent_sums_read_the_row_major_copy():
    assert MinMaxObserver.reads_order_free
    assert not MSEObserver.reads_order_free


def test_flat_in_memory_order_is_a_view_of_a_dense_layout():
    x = torch.arange(24.).reshape(1, 2, 3, 4)
    strided = x.to(memory_format=torch.channels_last)
    flat = flat_in_memory_order(strided)
    assert flat.data_ptr() == strided.data_ptr()
    assert sorted(flat.tolist()) == list(range(24))
    sliced = x[..., ::2]  # not dense: a row-major copy
    assert torch.equal(flat_in_memory_order(sliced), sliced.reshape(-1))


@pytest.mark.parametrize('layout', [
    lambda x: x.to(memory_format=torch.channels_last),
    lambda x: x.permute(3, 1, 0, 2).contiguous().permute(2, 1, 3, 0),
    lambda x: x[:, :1].expand(-1, 1, -1, -1).contiguous(
        memory_format=torch.channels_last),
    lambda x: x[..., ::2],  # not dense: read from a row-major copy
])
def test_memory_offsets_read_the_row_major_positions(layout):
    from mmrazor_quant.models.observers.histogram_base import _memory_offsets
    x = layout(torch.randn(3, 4, 5, 6))
    index = torch.randint(x.numel(), (500, ))
    flat = flat_in_memory_order(x)
    assert torch.equal(flat[_memory_offsets(index, x, flat)],
                       x.reshape(-1)[index])


def _mse_qparams(x, qscheme, tolerance=None):
    from mmrazor_quant.models.observers import HistogramMSEObserver
    observer = HistogramMSEObserver(qscheme, symmetric_tolerance=tolerance)
    observer(x)
    scale, zero_point = observer.calculate_qparams()
    return float(scale), int(zero_point), observer


def test_symmetric_tolerance_picks_a_grid_without_zero_point():
    """Centred data: the signed grid is as good, so it is taken (zero-point
    128, the symmetric scheme's own range); data with a thin negative tail:
    the unsigned grid from 0 within a tolerance of 1, the asymmetric one
    with tolerance 0; Hardswish outputs (from -0.375): the asymmetric grid,
    both others cost 3x its error or more."""
    from mmrazor_quant.structures.quantization import QSchema
    asym = QSchema(qdtype='quint8', bit=8, is_symmetry=False)
    sym = asym.replace(is_symmetry=True)
    g = torch.Generator().manual_seed(0)
    centred = torch.randn(100000, generator=g) + 0.05
    scale, zp, obs = _mse_qparams(centred, asym, 0.05)
    assert zp == 128
    assert obs.grid_errors['signed'] <= 1.05 * obs.grid_errors['asymmetric']
    assert scale == pytest.approx(_mse_qparams(centred, sym)[0], rel=1e-6)
    assert _mse_qparams(centred, asym)[1] != 128
    tail = torch.randn(100000, generator=g) * 0.05 + \
        torch.rand(100000, generator=g) * 5
    scale, zp, obs = _mse_qparams(tail, asym, 1.0)
    errors = obs.grid_errors
    assert zp == 0 and errors['unsigned'] <= 2 * errors['asymmetric']
    assert errors['unsigned'] < errors['signed']
    assert _mse_qparams(tail, asym, 0.0)[:2] == _mse_qparams(tail, asym)[:2]
    hswish = torch.nn.functional.hardswish(
        torch.randn(100000, generator=g) * 3)
    scale, zp, obs = _mse_qparams(hswish, asym, 1.0)
    assert (scale, zp) == _mse_qparams(hswish, asym)[:2] and zp > 0
    assert min(obs.grid_errors['signed'], obs.grid_errors['unsigned']) > \
        3 * obs.grid_errors['asymmetric']


@pytest.mark.parametrize('kwargs', [
    dict(method='mse', symmetric_tolerance=-0.1),
    dict(method='percentile', symmetric_tolerance=0.1)])
def test_symmetric_tolerance_is_checked(kwargs):
    from mmrazor_quant.models.observers import HistogramObserver
    with pytest.raises(ValueError, match='symmetric_tolerance'):
        HistogramObserver(**kwargs)
