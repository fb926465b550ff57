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


def test_random_backbones_get_trained_like_batch_norms():
    """Folded biases non-zero and no all-zero residual conv, reproducibly:
    what a trained network deploys (mmcls initialises BN to zero shifts
    and, in each ResNet block's last BN, zero scales)."""
    import torch
    from mmcls.models import ResNet

    from benchmarks.peers import trained_like_batch_norms

    def drawn():
        torch.manual_seed(0)
        net = ResNet(depth=18, zero_init_residual=True)
        net.init_weights()
        trained_like_batch_norms(net)
        return [m for m in net.modules()
                if isinstance(m, torch.nn.BatchNorm2d)]

    bns, again = drawn(), drawn()
    assert len(bns) == 20
    for bn, same in zip(bns, again):
        assert torch.equal(bn.bias, same.bias)
        assert bn.weight.min() >= 0.5 and bn.weight.max() <= 1.0
        assert bn.running_var.min() >= 0.5
        # the folded bias, beta - mean * gamma / sqrt(var + eps)
        folded = bn.bias - bn.running_mean * bn.weight / torch.sqrt(
            bn.running_var + bn.eps)
        assert (folded != 0).all()


def test_the_control_row_gives_the_ratio_of_two_compilations():
    """The A/A row: NNCF compiled again over NNCF, with its interval,
    beside ours / NNCF."""
    from benchmarks.peers import CONTROL, Contender, format_rows
    rows = {}
    for name, ms in (('ours', 1.1), ('NNCF', 1.0), (CONTROL, 1.02)):
        c = rows[name] = Contender(name)
        c.times = {1: [ms * 1e-3] * 11}
        c.latency = {1: ms}
        c.cpu = {1: 2 * ms}
    lines = format_rows('m', list(rows.values()), False, (1, ))
    assert lines[-2] == '| m | ours / NNCF | | | **1.10** (1.10-1.10; ' \
        'CPU time 1.10) |'
    assert lines[-1] == f'| m | A/A: {CONTROL} / NNCF | | | 1.02 (1.02-1.02) |'
