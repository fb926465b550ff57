"""fuse_conv_bn on a conv shared by several BNs (RTMDet's separated-BN
head): one copy per BN, folded into that BN."""
import copy

import pytest
import torch
from torch import fx, nn

from mmrazor_quant.models.qat_modules import ConvBnReLU2d
from mmrazor_quant.models.quantizers.passes.fuse import fuse_conv_bn
from .helpers import fake_quant_factory, randomize_bn


class SepBNHead(nn.Module):
    """Like ``RTMDetSepBNHead(share_conv=True)``: level 0 owns the conv,
    the other levels register the same object next to their own BN."""

    def __init__(self) -> None:
        super().__init__()
        self.stages = nn.ModuleList()
        for i in range(3):
            stage = nn.Module()
            stage.conv = nn.Conv2d(4, 4, 3, padding=1, bias=False)
            stage.bn = nn.BatchNorm2d(4)
            randomize_bn(stage.bn, seed=i)
            self.stages.append(stage)
        for stage in self.stages[1:]:
            stage.conv = self.stages[0].conv
        self.relu = nn.ReLU()

    def forward(self, x0, x1, x2):
        return [self.relu(s.bn(s.conv(x)))
                for s, x in zip(self.stages, (x0, x1, x2))]


def _feats():
    torch.manual_seed(0)
    return [torch.randn(2, 4, s, s) for s in (8, 4, 2)]


def test_shared_conv_is_untied_per_bn_and_keeps_outputs():
    model = SepBNHead()
    ref = copy.deepcopy(model).eval()
    keys = list(model.state_dict())
    graphs = {mode: fx.Tracer().trace(model) for mode in ('tensor', 'loss')}
    # torch.fx records every call under the first name
    assert [n.target for n in graphs['tensor'].nodes
            if n.op == 'call_module' and n.target.endswith('conv')] == [
                'stages.0.conv'] * 3

    names = fuse_conv_bn(model, graphs, fake_quant_factory)

    assert names == [f'stages.{i}.conv' for i in range(3)]
    convs = [s.conv for s in model.stages]
    assert all(type(c) is ConvBnReLU2d for c in convs)
    assert len({id(c) for c in convs}) == 3
    for i, conv in enumerate(convs):  # each owns its level's BN statistics
        torch.testing.assert_close(conv.bn.running_var,
                                   ref.stages[i].bn.running_var)
        torch.testing.assert_close(conv.weight, ref.stages[0].conv.weight)
    # the float checkpoint's keys (one conv weight per level) still load
    assert {k for k in keys if k.endswith('conv.weight')} == {
        f'stages.{i}.conv.weight' for i in range(3)} <= set(model.state_dict())
    for graph in graphs.values():
        for conv in convs:
            conv.weight_fake_quant.enable_fake_quant(False)
        out = fx.GraphModule(model, graph).eval()(*_feats())
        for o, r in zip(out, ref(*_feats())):
            torch.testing.assert_close(o, r, atol=1e-5, rtol=1e-5)


def test_shared_conv_without_a_sibling_name_still_raises():

    class Unregistered(SepBNHead):
        """The levels call level 0's conv but do not register it."""

        def forward(self, x0, x1, x2):
            return [s.bn(self.stages[0].conv(x))
                    for s, x in zip(self.stages, (x0, x1, x2))]

    model = Unregistered()
    for stage in model.stages[1:]:
        del stage.conv
    graphs = {'tensor': fx.Tracer().trace(model)}
    with pytest.raises(ValueError, match="BN 'stages.0.bn' in mode 'tensor' "
                       "but by BN 'stages.1.bn'"):
        fuse_conv_bn(model, graphs, fake_quant_factory)
