"""CustomTracer(input_shape=...): shape questions answered on an example
batch, shape arithmetic kept symbolic, decisions guarded at run time."""
import math

import pytest
import torch
from torch import nn
from torch.fx import GraphModule

from mmrazor_quant.models.task_modules import CustomTracer, TraceError
from mmrazor_quant.models.task_modules.tracer.example_values import (
    EXAMPLE_BATCH_SIZE,
)
from mmrazor_quant.models.task_modules.tracer.shape_guards import (
    ShapeGuardError,
)


def _trace(model: nn.Module, input_shape) -> GraphModule:
    graph = CustomTracer(input_shape=input_shape).trace(model)
    return GraphModule(model, graph)


class ChannelShuffle(nn.Module):
    """ShuffleNet's channel_shuffle with its assert, plus a conv leaf."""

    def __init__(self, groups: int = 2) -> None:
        super().__init__()
        self.groups = groups
        self.conv = nn.Conv2d(4, 4, 1)

    def forward(self, x):
        x = self.conv(x)
        assert x.dim() == 4
        b, c, h, w = x.size()
        assert c % self.groups == 0
        x = x.view(b, self.groups, c // self.groups, h, w)
        return x.transpose(1, 2).contiguous().view(b, -1, h, w)


def test_channel_shuffle_runs_at_other_batch_and_resolution():
    model = ChannelShuffle().eval()
    gm = _trace(model, (4, 8, 8))
    guards = [n for n in gm.graph.nodes if 'check_shape_guard' in n.name]
    assert [g.args[1:3] for g in guards] == [('bool', True), ('int', 4),
                                             ('bool', True)]
    for shape in [(EXAMPLE_BATCH_SIZE, 4, 8, 8), (32, 4, 8, 8),
                  (3, 4, 13, 5)]:
        x = torch.randn(shape)
        torch.testing.assert_close(gm(x), model(x), atol=0, rtol=0)
    # The conv stays a call_module leaf, so quantizers can wrap it.
    assert [n.target for n in gm.graph.nodes
            if n.op == 'call_module'] == ['conv']


def test_assert_on_dims_becomes_guard_naming_the_line():
    gm = _trace(ChannelShuffle().eval(), (4, 8, 8))
    with pytest.raises(ShapeGuardError, match=r'test_example_values.py:\d+'
                       r' \(forward\) for the value True'):
        gm(torch.randn(4, 8, 8))  # 3-d: x.dim() == 4 is now False


class ShapeQuestions(nn.Module):
    """len, int() of size arithmetic, dims, factories sized by proxies."""

    def forward(self, x):
        n_dims = len(x.shape)
        half = int(x.shape[2] / 2)
        ones = torch.ones(x.shape[0], half)
        grid = torch.arange(x.size(3))
        return ones * n_dims + grid.sum() + x.ndim


def test_shape_questions_get_values_and_stay_symbolic():
    model = ShapeQuestions()
    gm = _trace(model, (3, 6, 5))
    targets = [n.target for n in gm.graph.nodes if n.op == 'call_function']
    assert int in targets  # int(x.shape[2] / 2) is a graph node
    assert torch.ones in targets and torch.arange in targets
    # batch 2 at trace time: ones(2, 3) * 4 + (0+1+2+3+4) + 4
    out = gm(torch.randn(2, 3, 6, 5))
    torch.testing.assert_close(out, torch.full((2, 3), 18.))
    # batch 7, H 10, W 3: ones(7, 5) * 4 + 3 + 4
    out = gm(torch.randn(7, 3, 10, 3))
    torch.testing.assert_close(out, torch.full((7, 5), 11.))


class Padding(nn.Module):
    """mmcv AdaptivePadding: pad from the input size, then a branch."""

    def forward(self, x):
        h = x.shape[-1]
        pad = max(math.ceil(h / 4) * 4 - h, 0)
        if pad > 0:
            x = nn.functional.pad(x, [0, pad])
        return x


def test_padding_arithmetic_symbolic_branch_guarded():
    gm = _trace(Padding(), (1, 6))  # traced with pad 2 > 0
    assert gm(torch.randn(5, 1, 6)).shape == (5, 1, 8)
    assert gm(torch.randn(5, 1, 9)).shape == (5, 1, 12)  # pad 3, symbolic
    with pytest.raises(ShapeGuardError, match='Padding|value True'):
        gm(torch.randn(5, 1, 8))  # pad 0 would skip the branch


class DataDependent(nn.Module):

    def forward(self, x):
        if x.sum() > 0:
            return x
        return -x


def test_data_dependent_branch_still_fails_with_trace_error():
    with pytest.raises(TraceError, match='depends on the data'):
        CustomTracer(input_shape=(3, )).trace(DataDependent())


def test_without_input_shape_the_error_suggests_it():
    with pytest.raises(TraceError, match=r'input_shape=\(C, H, W\)'):
        CustomTracer().trace(ShapeQuestions())


class BatchNormThenSetitem(nn.Module):

    def __init__(self) -> None:
        super().__init__()
        self.bn = nn.BatchNorm1d(3)

    def forward(self, x):
        y = self.bn(x)
        y[:, 0] = 0.
        return y, y.requires_grad


def test_buffers_rng_restored_and_setitem_traced():
    model = BatchNormThenSetitem().train()
    rng = torch.get_rng_state()
    gm = _trace(model, (3, ))
    assert torch.equal(torch.get_rng_state(), rng)
    assert torch.equal(model.bn.running_mean, torch.zeros(3))
    assert int(model.bn.num_batches_tracked) == 0
    out, requires_grad = gm(torch.randn(4, 3))
    assert torch.equal(out[:, 0], torch.zeros(4))
    assert requires_grad is False  # answered at trace (under no_grad)


@pytest.mark.parametrize('shape', [(), (3, 0), (3, '8'), '364', (True, )])
def test_input_shape_is_validated(shape):
    with pytest.raises(ValueError, match='input_shape must be'):
        CustomTracer(input_shape=shape)
