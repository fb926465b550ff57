"""The one SQNR definition: closed forms and every edge case, and the four
reports that use it agree on them."""
import math

import numpy as np
import pytest
import torch

from mmrazor_quant.analysis import ErrorAccumulator, snr_db
from mmrazor_quant.deploy.parity import compare_outputs
from mmrazor_quant.utils.sqnr import sqnr_db, sqnr_from_sums


@pytest.mark.parametrize('kind', [torch.tensor, np.asarray])
def test_closed_forms(kind):
    ones = np.ones(100)
    # noise 0.1 on a signal of ones: 10 log10(100 / 1) = 20 dB
    assert sqnr_db(kind(ones), kind(ones * 1.1)) == pytest.approx(20.0)
    # half the noise amplitude: 20 log10(2) = 6.02 dB more
    assert sqnr_db(kind(ones), kind(ones * 1.05)) == pytest.approx(
        20.0 + 20 * math.log10(2))
    # noise as strong as the signal: 0 dB
    assert sqnr_db(kind(ones), kind(ones * 0)) == 0.0


def test_edge_cases():
    x = torch.randn(3, 4)
    assert sqnr_db(x, x.clone()) == math.inf  # identical
    assert sqnr_db(torch.zeros(5), torch.zeros(5)) == math.inf  # both zero
    assert sqnr_db(torch.zeros(5), torch.ones(5)) == -math.inf  # no signal
    assert sqnr_db(np.zeros(5), np.ones(5)) == -math.inf
    # noise so large the ratio underflows: -inf, not a math-domain error
    assert sqnr_from_sums(1e-300, 1e300) == -math.inf
    assert sqnr_from_sums(0.0, 0.0) == math.inf


def test_shapes_must_match_and_are_named():
    with pytest.raises(ValueError, match=r'reference \(2, 3\) and test '
                       r'\(6,\)'):
        sqnr_db(torch.ones(2, 3), torch.ones(6))
    with pytest.raises(ValueError, match=r'reference \(4,\) and test '
                       r'\(4, 1\)'):
        sqnr_db(np.ones(4), np.ones((4, 1)))  # would broadcast silently


@pytest.mark.parametrize('kind', [torch.tensor, np.asarray])
def test_accumulates_in_float64(kind):
    # x = 2^66, y = 2^66 + 2^50, both exact in float32; x^2 = 2^132 is past
    # float32's range (2^128), so only float64 sums give 10 log10(2^32)
    x = np.full(4, 2.0**66, dtype=np.float32)
    y = np.full(4, 2.0**66 + 2.0**50, dtype=np.float32)
    assert sqnr_db(kind(x), kind(y)) == pytest.approx(
        320 * math.log10(2), rel=1e-12)


def test_mixed_tensor_and_array():
    assert sqnr_db(torch.ones(4), np.full(4, 1.1)) == pytest.approx(20.0)


def test_every_report_agrees_on_the_edge_cases():
    zeros, ones = np.zeros((2, 3)), np.ones((2, 3))
    acc = ErrorAccumulator()
    acc.update(torch.zeros(2, 3), torch.ones(2, 3))
    assert acc.result()['snr'] == -math.inf
    assert snr_db(torch.zeros(3), torch.ones(3)) == -math.inf
    # parity used to report ~ -300 dB here (signal clamped to 1e-30)
    assert compare_outputs(zeros, ones).sqnr_db == -math.inf
    assert compare_outputs(ones, ones).sqnr_db == math.inf
    assert compare_outputs(ones, ones * 1.1).sqnr_db == pytest.approx(20.0)
