"""ConvBn2d / ConvBnReLU2d / LinearBn1d: float equivalence, folding, freezing
and gradients."""
import copy

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from mmrazor_quant.models.qat_modules import (
    ConvBn2d,
    ConvBnReLU2d,
    LinearBn1d,
    LinearBnReLU1d,
    freeze_bn_stats,
    update_bn_stats,
)
from .helpers import make_fake_quant, per_channel_fake_quant, randomize_bn

CONVS = {
    'plain': lambda: nn.Conv2d(4, 6, 3, padding=1),
    # MobileNetV2-style depthwise conv without bias, strided and dilated.
    'depthwise': lambda: nn.Conv2d(
        6, 6, 3, stride=2, padding=2, dilation=2, groups=6, bias=False),
}


def _float_and_fused(kind, with_relu, fake_quant=False):
    torch.manual_seed(0)
    conv = CONVS[kind]()
    bn = randomize_bn(nn.BatchNorm2d(conv.out_channels))
    relu = nn.ReLU() if with_relu else nn.Identity()
    ref = nn.Sequential(conv, bn, relu)
    fused_cls = ConvBnReLU2d if with_relu else ConvBn2d
    fused = fused_cls.from_float(
        copy.deepcopy(conv), copy.deepcopy(bn), make_fake_quant())
    fused.weight_fake_quant.enable_fake_quant(fake_quant)
    return ref, fused, torch.randn(8, conv.in_channels, 9, 9)


def _assert_bn_state_equal(bn, ref_bn):
    for name in ('running_mean', 'running_var', 'num_batches_tracked'):
        torch.testing.assert_close(getattr(bn, name), getattr(ref_bn, name),
                                   atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize('kind', list(CONVS))
@pytest.mark.parametrize('with_relu', [False, True])
@pytest.mark.parametrize('regime', ['train', 'eval', 'frozen'])
def test_matches_float_without_fake_quant(kind, with_relu, regime):
    ref, fused, x = _float_and_fused(kind, with_relu)
    if regime == 'eval':
        ref.eval()
        fused.eval()
    if regime == 'frozen':
        fused.freeze_bn_stats()
        ref[1].eval()  # the float BN with running statistics, no updates
    for _ in range(3):  # running statistics evolve between steps
        torch.testing.assert_close(fused(x), ref(x), atol=1e-5, rtol=1e-5)
        x = x * 1.5 + 0.3
    _assert_bn_state_equal(fused.bn, ref[1])
    if regime == 'train':
        assert fused.bn.num_batches_tracked.item() == 3
    else:
        assert fused.bn.num_batches_tracked.item() == 0


def test_folded_weight_bias_closed_form():
    ref, fused, _ = _float_and_fused('plain', False)
    conv, bn = ref[0], ref[1]
    s = bn.weight / torch.sqrt(bn.running_var + bn.eps)
    weight, bias = fused.get_folded_weight_bias()
    torch.testing.assert_close(weight, conv.weight * s[:, None, None, None])
    torch.testing.assert_close(bias,
                               bn.bias + (conv.bias - bn.running_mean) * s)
    assert not weight.requires_grad and not bias.requires_grad
    # Without a conv bias the folded bias is beta - mu * s.
    _, dw, _ = _float_and_fused('depthwise', False)
    s = dw.bn.weight / torch.sqrt(dw.bn.running_var + dw.bn.eps)
    torch.testing.assert_close(dw.get_folded_weight_bias()[1],
                               dw.bn.bias - dw.bn.running_mean * s)


@pytest.mark.parametrize('kind', list(CONVS))
def test_frozen_is_conv_with_quantized_folded_weight(kind):
    _, fused, x = _float_and_fused(kind, False, fake_quant=True)
    fused.freeze_bn_stats()
    w_fold, b_fold = fused.get_folded_weight_bias()
    expected = fused._conv_forward(x, per_channel_fake_quant(w_fold), b_fold)
    torch.testing.assert_close(fused(x), expected, atol=1e-5, rtol=1e-5)
    # ... and differs from the unquantized result, so the check can fail.
    assert not torch.allclose(
        fused(x), fused._conv_forward(x, w_fold, b_fold), atol=1e-4)


def test_train_with_fake_quant_uses_batch_statistics():
    ref, fused, x = _float_and_fused('plain', True, fake_quant=True)
    bn = ref[1]
    s = bn.weight / torch.sqrt(bn.running_var + bn.eps)
    w_fold = ref[0].weight * s[:, None, None, None]
    y = F.conv2d(x, per_channel_fake_quant(w_fold), None, padding=1)
    y = y / s[None, :, None, None] + ref[0].bias[None, :, None, None]
    expected = F.relu(bn(y))  # train mode: batch statistics, updates stats
    torch.testing.assert_close(fused(x), expected, atol=1e-5, rtol=1e-5)
    _assert_bn_state_equal(fused.bn, bn)


@pytest.mark.parametrize('frozen', [False, True])
def test_gradients_match_float(frozen):
    ref, fused, x = _float_and_fused('plain', True)
    if frozen:
        fused.freeze_bn_stats()
        ref[1].eval()
    ref(x).square().sum().backward()
    fused(x).square().sum().backward()
    pairs = [(fused.weight, ref[0].weight), (fused.bn.weight, ref[1].weight),
             (fused.bn.bias, ref[1].bias)]
    if frozen:
        pairs.append((fused.bias, ref[0].bias))
    else:
        # Batch statistics cancel a per-channel bias: its gradient is 0 up
        # to rounding (~1e-4 here), in the float model too.
        assert fused.bias.grad.abs().max() < 1e-3
    for got, want in pairs:
        assert want.grad.abs().sum() > 1
        torch.testing.assert_close(got.grad, want.grad, atol=1e-4, rtol=1e-4)


def test_gradients_flow_with_fake_quant():
    _, fused, x = _float_and_fused('depthwise', True, fake_quant=True)
    fused(x).square().sum().backward()
    for param in (fused.weight, fused.bn.weight, fused.bn.bias):
        assert torch.isfinite(param.grad).all()
        assert param.grad.abs().sum() > 0


def test_zero_gamma_channel_matches_float():
    ref, fused, x = _float_and_fused('plain', False)
    with torch.no_grad():
        for bn in (ref[1], fused.bn):
            bn.weight[2] = 0.
    out = fused(x)
    assert torch.isfinite(out).all()
    torch.testing.assert_close(out, ref(x), atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(out[:, 2], ref[1].bias[2].expand_as(out[:, 2]))


@pytest.mark.parametrize('with_relu', [False, True])
def test_to_float_equals_frozen_module(with_relu):
    ref, fused, x = _float_and_fused('depthwise', with_relu)
    fused.freeze_bn_stats()
    deployed = fused.to_float()
    conv = deployed[0] if with_relu else deployed
    assert type(conv) is nn.Conv2d and conv.bias is not None
    assert (conv.stride, conv.dilation, conv.groups) == ((2, 2), (2, 2), 6)
    if with_relu:
        assert [type(m) for m in deployed] == [nn.Conv2d, nn.ReLU]
    torch.testing.assert_close(deployed(x), fused(x), atol=1e-5, rtol=1e-5)
    ref.eval()
    torch.testing.assert_close(deployed(x), ref(x), atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize('fused_cls', [LinearBn1d, LinearBnReLU1d])
@pytest.mark.parametrize('frozen', [False, True])
def test_linear_bn(fused_cls, frozen):
    torch.manual_seed(0)
    linear = nn.Linear(7, 5, bias=False)
    bn = randomize_bn(nn.BatchNorm1d(5))
    act = nn.ReLU() if fused_cls is LinearBnReLU1d else nn.Identity()
    ref = nn.Sequential(linear, bn, act)
    fused = fused_cls.from_float(
        copy.deepcopy(linear), copy.deepcopy(bn), make_fake_quant())
    fused.weight_fake_quant.disable_fake_quant()
    if frozen:
        fused.freeze_bn_stats()
        ref[1].eval()
    x = torch.randn(16, 7)
    torch.testing.assert_close(fused(x), ref(x), atol=1e-5, rtol=1e-5)
    _assert_bn_state_equal(fused.bn, ref[1])
    fused.freeze_bn_stats()
    ref.eval()
    torch.testing.assert_close(fused.to_float()(x), ref(x), atol=1e-5,
                               rtol=1e-5)


def test_model_helpers_switch_every_fused_module():
    _, a, _ = _float_and_fused('plain', False)
    _, b, _ = _float_and_fused('depthwise', True)
    model = nn.Sequential(a, nn.Sequential(b, nn.BatchNorm2d(6)))
    assert freeze_bn_stats(model) == 2
    assert a.bn_frozen and b.bn_frozen
    assert 'bn_frozen=True' in repr(b)
    assert update_bn_stats(model) == 2
    assert not a.bn_frozen and not b.bn_frozen


def test_from_float_errors():
    conv = nn.Conv2d(3, 4, 1)
    with pytest.raises(ValueError, match='track_running_stats=False'):
        ConvBn2d.from_float(conv, nn.BatchNorm2d(4, track_running_stats=False),
                            make_fake_quant())
    with pytest.raises(ValueError, match='BN has 5 features but the layer '
                       'has 4 output channels'):
        ConvBn2d.from_float(conv, nn.BatchNorm2d(5), make_fake_quant())
    with pytest.raises(TypeError, match='expects a BatchNorm2d, got '
                       'BatchNorm1d'):
        ConvBn2d.from_float(conv, nn.BatchNorm1d(4), make_fake_quant())


def test_state_dict_holds_bn_under_fused_module():
    _, fused, _ = _float_and_fused('plain', False)
    keys = set(fused.state_dict())
    assert {'weight', 'bias', 'bn.weight', 'bn.running_var',
            'weight_fake_quant.scale'} <= keys


def test_lsq_scale_is_sized_and_learns_through_fused_module():
    from .helpers import qconfig
    handler = qconfig('mmrazor_quant.LearnableFakeQuantize',
                      'mmrazor_quant.LSQPerChannelObserver')
    conv = nn.Conv2d(3, 5, 3, bias=False)
    bn = randomize_bn(nn.BatchNorm2d(5))
    fused = ConvBn2d.from_float(conv, bn, handler.build_weight_fake_quant())
    scale = fused.weight_fake_quant.scale
    assert isinstance(scale, nn.Parameter) and scale.shape == (5, )
    # The optimizer, built now, must keep training the same tensor.
    params = {id(p) for p in fused.parameters()}
    fused(torch.randn(4, 3, 6, 6)).square().sum().backward()
    assert fused.weight_fake_quant.scale is scale and id(scale) in params
    assert scale.grad is not None and scale.grad.abs().sum() > 0
    assert bn.weight.grad.abs().sum() > 0
