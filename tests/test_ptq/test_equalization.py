"""Cross-layer equalization keeps the float function and evens out the
per-channel weight ranges."""
import torch

from mmrazor_quant.models.fake_quants import disable_fake_quant
from mmrazor_quant.ptq import (
    equalize_cross_layer,
    find_equalization_pairs,
    output_channel_ranges,
    tensor_graph_module,
)
from .conftest import build_quantized


def _spread(model, names):
    """Mean over layers of max/min per-channel range of the folded weight."""
    modules = dict(tensor_graph_module(model).named_modules())
    ratios = []
    for name in names:
        r = output_channel_ranges(modules[name])
        ratios.append(float(r.max() / r.min()))
    return sum(ratios) / len(ratios)


def test_cle_keeps_float_outputs_and_shrinks_spread(float_state, digits):
    model = build_quantized(float_state)
    gm = tensor_graph_module(model)
    # Uneven BN scales, as after training with weight decay.
    g = torch.Generator().manual_seed(0)
    for module in gm.modules():
        if isinstance(module, torch.nn.BatchNorm2d):
            with torch.no_grad():
                module.weight.mul_(torch.exp(
                    2 * torch.randn(module.num_features, generator=g)))
    disable_fake_quant(model)
    pairs = find_equalization_pairs(gm)
    # conv1 -> ReLU -> conv2 inside each of the 8 BasicBlocks
    assert len(pairs) == 8
    assert ('backbone.layer1.0.conv1', 'backbone.layer1.0.conv2') in pairs
    firsts = [a for a, _ in pairs]
    x = digits[0][:64]
    with torch.no_grad():
        before = model(x, mode='tensor')
        spread_before = _spread(model, firsts)
        assert equalize_cross_layer(model) == pairs
        after = model(x, mode='tensor')
    rel = (after - before).norm() / before.norm()
    assert rel <= 1e-5
    spread_after = _spread(model, firsts)
    assert spread_after < 0.5 * spread_before


def test_cle_depthwise_pair():
    from torch import nn

    from mmrazor_quant.ptq.equalization import equalize_pair
    conv = nn.Conv2d(4, 6, 1)
    dw = nn.Conv2d(6, 6, 3, padding=1, groups=6)
    with torch.no_grad():
        conv.weight.mul_(
            torch.tensor([1, 10, 100, 1, 0.1, 5.]).view(-1, 1, 1, 1))
    for m in (conv, dw):
        m.get_folded_weight_bias = (
            lambda m=m: (m.weight.detach(), m.bias.detach()))
    x = torch.randn(2, 4, 5, 5)
    before = dw(torch.relu(conv(x)))
    equalize_pair(conv, dw)
    torch.testing.assert_close(dw(torch.relu(conv(x))), before,
                               rtol=1e-5, atol=1e-5)
    r1 = conv.weight.abs().flatten(1).amax(1)
    r2 = dw.weight.abs().flatten(1).amax(1)
    torch.testing.assert_close(r1, r2, rtol=1e-5, atol=0)
