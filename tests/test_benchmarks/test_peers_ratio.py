"""benchmarks/peers.py's interval of the ours / NNCF latency ratio."""
import numpy as np
import pytest

from benchmarks.peers import ratio_interval


def test_interval_of_a_constant_ratio_is_that_ratio():
    ours = list(np.random.default_rng(0).uniform(1.0, 2.0, 101))
    low, high = ratio_interval(ours, [2 * t for t in ours])
    assert low == pytest.approx(0.5) and high == pytest.approx(0.5)


def test_interval_holds_the_ratio_of_medians_and_narrows_with_rounds():
    rng = np.random.default_rng(1)

    def width(rounds):
        load = rng.uniform(1.0, 1.5, rounds)  # shared by a round's calls
        ours = load * rng.normal(1.0, 0.03, rounds)
        peer = load * rng.normal(1.0, 0.03, rounds)
        low, high = ratio_interval(list(ours), list(peer))
        assert low <= np.median(ours) / np.median(peer) <= high
        return high - low

    assert width(1000) < width(50) / 2
