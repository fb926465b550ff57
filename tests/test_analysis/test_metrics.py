"""Metric functions against closed forms; statistics of known tensors."""
import math

import pytest
import torch

from mmrazor_quant.analysis import (
    ErrorAccumulator,
    cosine,
    mse,
    noise_histogram,
    snr_db,
    tensor_statistics,
)
from mmrazor_quant.analysis.metrics import check_metric


def test_snr_closed_form():
    x = torch.ones(100)
    # noise 0.1 per element: 10 log10(100 / 1) = 20 dB
    assert snr_db(x, x * 1.1) == pytest.approx(20.0)
    # noise amplitude halved: +6.02 dB
    assert snr_db(x, x * 1.05) == pytest.approx(20.0 + 20 * math.log10(2))
    assert snr_db(x, x) == math.inf
    assert snr_db(torch.zeros(3), torch.ones(3)) == -math.inf


def test_cosine_closed_form():
    x = torch.tensor([1.0, 2.0, 3.0])
    assert cosine(x, 3 * x) == pytest.approx(1.0)
    assert cosine(x, -x) == pytest.approx(-1.0)
    assert cosine(torch.tensor([1.0, 0.0]),
                  torch.tensor([0.0, 5.0])) == pytest.approx(0.0)
    assert cosine(torch.tensor([1.0, 0.0]),
                  torch.tensor([1.0, 1.0])) == pytest.approx(2**-0.5)
    assert cosine(torch.zeros(2), torch.zeros(2)) == 1.0
    assert cosine(torch.zeros(2), torch.ones(2)) == 0.0


def test_mse_closed_form():
    x = torch.tensor([[0.0, 1.0], [2.0, 3.0]])
    y = x + torch.tensor([[1.0, -1.0], [2.0, 0.0]])
    assert mse(x, y) == pytest.approx((1 + 1 + 4 + 0) / 4)
    with pytest.raises(ValueError, match='shapes differ'):
        mse(x, y.flatten())


def test_accumulator_equals_metrics_of_the_concatenation():
    gen = torch.Generator().manual_seed(0)
    xs = [torch.randn(5, 7, generator=gen) for _ in range(3)]
    ys = [x + 0.1 * torch.randn(5, 7, generator=gen) for x in xs]
    acc = ErrorAccumulator()
    for x, y in zip(xs, ys):
        acc.update(x, y)
    x, y = torch.cat(xs), torch.cat(ys)
    result = acc.result()
    assert result['snr'] == pytest.approx(snr_db(x, y))
    assert result['cosine'] == pytest.approx(cosine(x, y))
    assert result['mse'] == pytest.approx(mse(x, y))
    with pytest.raises(RuntimeError, match='before update'):
        ErrorAccumulator().result()


def test_unknown_metric_names_the_choices():
    with pytest.raises(ValueError, match=r"'psnr'.*\['cosine', 'mse'"):
        check_metric('psnr')


def test_tensor_statistics_outliers_and_noise():
    x = torch.zeros(1000)
    x[::2] = 1.0
    x[::2] *= -1.0
    x[1::2] = 1.0  # +-1, mean 0, std 1
    x[0] = 100.0  # one outlier
    q = x.clone()
    q[1] += 0.5
    stats = tensor_statistics('t', x, q, k=3.0)
    assert stats.numel == 1000 and stats.max == 100.0 and stats.min == -1.0
    assert stats.outlier_ratio == pytest.approx(1 / 1000)
    # the 99.9th percentile of |x| is 1 (999 of 1000 values): 100x range
    assert stats.range_ratio == pytest.approx(100.0, rel=0.1)
    assert stats.beyond_percentile == pytest.approx(1 / 1000)
    assert stats.noise_snr == pytest.approx(snr_db(x, q))
    counts, edges = noise_histogram(x, q, bins=4)
    assert counts.sum() == 1000 and len(edges) == 5
    assert counts[-1] == 1  # the single +0.5 error
