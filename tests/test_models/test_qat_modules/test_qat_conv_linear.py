"""QATConv*d / QATLinear / ConvReLU*d / LinearReLU against float modules."""
import copy

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from mmrazor_quant.models.qat_modules import (
    ConvReLU2d,
    LinearReLU,
    QATConv1d,
    QATConv2d,
    QATConv3d,
    QATLinear,
)
from mmrazor_quant.registry import MODELS
from .helpers import make_fake_quant, per_channel_fake_quant


@pytest.mark.parametrize('qat_cls, conv, shape', [
    (QATConv1d, nn.Conv1d(4, 6, 3, padding=1), (2, 4, 9)),
    (QATConv2d, nn.Conv2d(4, 6, 3, stride=2, padding=2, dilation=2), (2, 4, 9,
                                                                      9)),
    (QATConv2d, nn.Conv2d(4, 4, 3, padding=1, groups=4, bias=False),
     (2, 4, 7, 7)),
    (QATConv2d, nn.Conv2d(4, 6, 3, padding=1, padding_mode='reflect'),
     (2, 4, 7, 7)),
    (QATConv3d, nn.Conv3d(2, 3, 3), (1, 2, 5, 5, 5)),
])
def test_qat_conv(qat_cls, conv, shape):
    torch.manual_seed(0)
    x = torch.randn(shape)
    fake_quant = make_fake_quant()
    qat = qat_cls.from_float(conv, fake_quant)
    assert qat.weight is conv.weight and qat.bias is conv.bias
    assert qat.weight_fake_quant is fake_quant
    # Per-channel qparams sized before any data is seen.
    assert fake_quant.scale.shape == (conv.out_channels, )
    assert type(qat).is_fx_leaf

    fake_quant.disable_fake_quant()
    torch.testing.assert_close(qat(x), conv(x), atol=0, rtol=0)

    fake_quant.enable_fake_quant()
    wq = per_channel_fake_quant(conv.weight)
    expected = conv._conv_forward(x, wq, conv.bias)
    torch.testing.assert_close(qat(x), expected, atol=0, rtol=0)
    # Quantization changed something, so the check above can fail.
    assert not torch.allclose(wq, conv.weight)

    deployed = qat.to_float()
    assert type(deployed) is type(conv)
    assert deployed.weight is not conv.weight
    torch.testing.assert_close(deployed(x), conv(x), atol=0, rtol=0)


def test_conv_relu2d():
    torch.manual_seed(0)
    conv = nn.Conv2d(3, 5, 3)
    x = torch.randn(2, 3, 6, 6)
    qat = ConvReLU2d.from_float(conv, make_fake_quant())
    qat.weight_fake_quant.disable_fake_quant()
    torch.testing.assert_close(qat(x), F.relu(conv(x)), atol=0, rtol=0)
    assert (qat(x) == 0).any()
    deployed = qat.to_float()
    assert isinstance(deployed, nn.Sequential)
    assert [type(m) for m in deployed] == [nn.Conv2d, nn.ReLU]
    torch.testing.assert_close(deployed(x), qat(x), atol=0, rtol=0)


@pytest.mark.parametrize('qat_cls', [QATLinear, LinearReLU])
@pytest.mark.parametrize('bias', [True, False])
def test_qat_linear(qat_cls, bias):
    torch.manual_seed(0)
    linear = nn.Linear(8, 5, bias=bias)
    x = torch.randn(4, 3, 8)
    act = F.relu if qat_cls is LinearReLU else (lambda t: t)
    qat = qat_cls.from_float(linear, make_fake_quant())
    assert qat.weight_fake_quant.scale.shape == (5, )
    expected = act(F.linear(x, per_channel_fake_quant(linear.weight),
                            linear.bias))
    torch.testing.assert_close(qat(x), expected, atol=0, rtol=0)
    weight, folded_bias = qat.get_folded_weight_bias()
    assert torch.equal(weight, linear.weight) and not weight.requires_grad
    assert (folded_bias is None) == (not bias)

    qat.weight_fake_quant.disable_fake_quant()
    torch.testing.assert_close(qat.to_float()(x), act(linear(x)), atol=0,
                               rtol=0)


def test_gradients_reach_float_parameters():
    conv = nn.Conv2d(3, 4, 3)
    qat = QATConv2d.from_float(conv, make_fake_quant())
    qat(torch.randn(2, 3, 5, 5)).square().sum().backward()
    assert conv.weight.grad.abs().sum() > 0
    assert conv.bias.grad.abs().sum() > 0


def test_from_float_checks_types():
    with pytest.raises(TypeError, match='QATConv2d.from_float expects a '
                       'Conv2d, got Conv1d'):
        QATConv2d.from_float(nn.Conv1d(2, 2, 1), make_fake_quant())
    with pytest.raises(TypeError, match='expects an nn.Linear, got Conv2d'):
        QATLinear.from_float(nn.Conv2d(2, 2, 1), make_fake_quant())
    with pytest.raises(TypeError, match='must be a BaseFakeQuantize, got '
                       'Identity'):
        QATConv2d.from_float(nn.Conv2d(2, 2, 1), nn.Identity())


def test_keeps_train_mode_and_registry():
    conv = nn.Conv2d(2, 2, 1).eval()
    assert not QATConv2d.from_float(conv, make_fake_quant()).training
    assert MODELS.get('mmrazor_quant.QATConv2d') is QATConv2d
    assert MODELS.get('mmrazor_quant.LinearReLU') is LinearReLU
    # state_dict keys: the float ones plus the fake quant's.
    qat = QATConv2d.from_float(copy.deepcopy(conv), make_fake_quant())
    keys = set(qat.state_dict())
    assert set(conv.state_dict()) < keys
    assert 'weight_fake_quant.scale' in keys
    assert 'weight_fake_quant.observer.min_val' in keys
