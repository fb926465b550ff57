"""One predicate for "is this a QAT layer", and the shared base behind it."""
import pytest
import torch
from torch import nn

from mmrazor_quant.deploy.weight_quantized_layer import from_qat_module
from mmrazor_quant.models.qat_modules import (
    BaseQATModule,
    ConvBn2d,
    ConvBnReLU2d,
    ConvReLU1d,
    ConvReLU2d,
    ConvReLU3d,
    LinearBn1d,
    LinearBnReLU1d,
    LinearReLU,
    QATConv1d,
    QATConv2d,
    QATConv3d,
    QATLinear,
    is_qat_module,
)
from mmrazor_quant.models.quantizers.op_kinds import (
    is_weighted_conv,
    is_weighted_linear,
)
from .helpers import make_fake_quant

CONVS = (QATConv1d, QATConv2d, QATConv3d, ConvReLU1d, ConvReLU2d, ConvReLU3d)
FLOAT_CONV = {1: nn.Conv1d, 2: nn.Conv2d, 3: nn.Conv3d}


@pytest.mark.parametrize('cls', CONVS)
def test_every_qat_conv_is_a_qat_module_and_a_conv(cls):
    dim = int(cls.__name__[-2])
    qat = cls.from_float(FLOAT_CONV[dim](2, 3, 1), make_fake_quant())
    assert is_qat_module(qat) and is_weighted_conv(qat)
    assert not is_weighted_linear(qat)


@pytest.mark.parametrize('cls', (QATLinear, LinearReLU))
def test_every_qat_linear_is_a_qat_module_and_a_linear(cls):
    qat = cls.from_float(nn.Linear(2, 3), make_fake_quant())
    assert is_qat_module(qat) and is_weighted_linear(qat)
    assert not is_weighted_conv(qat)


@pytest.mark.parametrize('cls, layer, bn', [
    (ConvBn2d, nn.Conv2d(2, 3, 1), nn.BatchNorm2d(3)),
    (ConvBnReLU2d, nn.Conv2d(2, 3, 1), nn.BatchNorm2d(3)),
    (LinearBn1d, nn.Linear(2, 3), nn.BatchNorm1d(3)),
    (LinearBnReLU1d, nn.Linear(2, 3), nn.BatchNorm1d(3)),
])
def test_bn_fused_layers_are_qat_modules(cls, layer, bn):
    assert is_qat_module(cls.from_float(layer, bn, make_fake_quant()))


def test_float_layers_and_the_deploy_form_are_not():
    assert not is_qat_module(nn.Conv2d(2, 3, 1))
    assert not is_qat_module(nn.Linear(2, 3))
    assert not is_qat_module(None)
    qat = QATConv2d.from_float(nn.Conv2d(2, 3, 1), make_fake_quant())
    qat.weight_fake_quant(qat.weight)  # calibrate
    deployed = from_qat_module(qat)
    # it carries a weight_fake_quant too: the old duck-typed checks on
    # that attribute alone took it for a QAT layer
    assert hasattr(deployed, 'weight_fake_quant')
    assert not is_qat_module(deployed)


def test_a_new_qat_layer_needs_only_its_op_and_shape():
    """The base brings from_float/forward/get_folded_weight_bias/to_float:
    a transposed conv supplies the float op and how to copy its shape."""

    class QATConvTranspose2d(BaseQATModule, nn.ConvTranspose2d):
        _float_cls = nn.ConvTranspose2d

        @staticmethod
        def _like(layer_cls, layer):
            return layer_cls(layer.in_channels, layer.out_channels,
                             layer.kernel_size, bias=layer.bias is not None,
                             device='meta')

        def _apply_weight(self, x, weight, bias):
            return nn.functional.conv_transpose2d(x, weight, bias)

    float_layer = nn.ConvTranspose2d(3, 3, 2)
    qat = QATConvTranspose2d.from_float(float_layer, make_fake_quant())
    assert is_qat_module(qat) and qat.weight is float_layer.weight
    qat.weight_fake_quant.disable_fake_quant()
    x = torch.randn(1, 3, 4, 4)
    torch.testing.assert_close(qat(x), float_layer(x), rtol=0, atol=0)
    torch.testing.assert_close(qat.to_float()(x), float_layer(x), rtol=0,
                               atol=0)
    with pytest.raises(TypeError, match='QATConvTranspose2d.from_float '
                       'expects a ConvTranspose2d, got Conv2d'):
        QATConvTranspose2d.from_float(nn.Conv2d(3, 3, 2), make_fake_quant())
