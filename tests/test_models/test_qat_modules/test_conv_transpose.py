"""QATConvTranspose*d: weights fake-quantized per output channel, which is
axis 1 of a transposed conv's ``(in, out, k...)`` weight; which quantizers
swap them."""
import pytest
import torch
import torch.nn.functional as F
from torch import fx, nn

from mmrazor_quant.deploy.weight_quantized_layer import from_qat_module
from mmrazor_quant.models.qat_modules import (
    QATConvTranspose1d,
    QATConvTranspose2d,
    QATConvTranspose3d,
    is_qat_module,
)
from mmrazor_quant.models.quantizers import (
    AcademicQuantizer,
    LiteRTQuantizer,
    NCNNQuantizer,
    OpenVINOQuantizer,
    RKNNQuantizer,
    TensorRTQuantizer,
    TorchNativeQuantizer,
)
from mmrazor_quant.models.quantizers.passes.swap_qat_modules import (
    swap_qat_modules,
)
from .helpers import fake_quant_factory, make_fake_quant


def per_output_channel_fake_quant(w: torch.Tensor) -> torch.Tensor:
    """The reference on axis 1: ``round(w / s[o]).clamp(-127, 127) * s[o]``
    with ``s[o] = max |w[:, o]| / 127``."""
    scale = (w.detach().abs().transpose(0, 1).flatten(1).amax(1) /
             127).clamp(min=1e-8)
    shape = [1, -1] + [1] * (w.dim() - 2)
    scale = scale.reshape(shape)
    return (w / scale).round().clamp(-127, 127) * scale


@pytest.mark.parametrize('qat_cls, layer, shape', [
    (QATConvTranspose1d, nn.ConvTranspose1d(4, 6, 3, stride=2), (2, 4, 7)),
    (QATConvTranspose2d,
     nn.ConvTranspose2d(4, 6, 3, stride=2, padding=1, output_padding=1,
                        dilation=1), (2, 4, 5, 5)),
    (QATConvTranspose2d, nn.ConvTranspose2d(5, 3, 2, stride=2, bias=False),
     (1, 5, 4, 6)),
    (QATConvTranspose3d, nn.ConvTranspose3d(2, 3, 2, stride=2),
     (1, 2, 3, 3, 3)),
])
def test_weight_is_quantized_per_output_channel_on_axis_1(
        qat_cls, layer, shape):
    torch.manual_seed(0)
    x = torch.randn(shape)
    qat = qat_cls.from_float(layer, make_fake_quant())
    fake_quant = qat.weight_fake_quant
    assert is_qat_module(qat) and qat.weight is layer.weight
    assert fake_quant.ch_axis == 1 and fake_quant.observer.ch_axis == 1
    # sized to the output channels before any data
    assert fake_quant.scale.shape == (layer.out_channels, )

    fake_quant.disable_fake_quant()
    torch.testing.assert_close(qat(x), layer(x), atol=0, rtol=0)

    fake_quant.enable_fake_quant()
    wq = per_output_channel_fake_quant(layer.weight)
    torch.testing.assert_close(fake_quant(layer.weight), wq, atol=0, rtol=0)
    # the scales are the closed form's, one per output channel
    torch.testing.assert_close(
        fake_quant.scale,
        layer.weight.detach().abs().transpose(0, 1).flatten(1).amax(1) /
        127, atol=0, rtol=0)
    assert not torch.allclose(wq, layer.weight)
    conv = {1: F.conv_transpose1d, 2: F.conv_transpose2d,
            3: F.conv_transpose3d}[x.dim() - 2]
    expected = conv(x, wq, layer.bias, layer.stride, layer.padding,
                    layer.output_padding, layer.groups, layer.dilation)
    torch.testing.assert_close(qat(x), expected, atol=0, rtol=0)

    deployed = from_qat_module(qat)
    torch.testing.assert_close(deployed(x), expected, atol=0, rtol=0)
    assert type(qat.to_float()) is type(layer)


class Decoder(nn.Module):

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.up = nn.ConvTranspose2d(8, 4, 2, stride=2)
        self.grouped = nn.ConvTranspose2d(4, 4, 2, stride=2, groups=2)

    def forward(self, x):
        return self.grouped(F.relu(self.up(F.relu(self.conv(x)))))


def test_swap_takes_transposed_convs_without_groups():
    model = Decoder()
    graphs = {'tensor': fx.symbolic_trace(model).graph}
    assert swap_qat_modules(model, graphs, fake_quant_factory,
                            fuse_relu=True) == ['conv', 'up']
    # no fused-ReLU class for a transposed conv: its ReLU stays a node
    assert type(model.up) is QATConvTranspose2d
    assert type(model.grouped) is nn.ConvTranspose2d

    model = Decoder()
    graphs = {'tensor': fx.symbolic_trace(model).graph}
    assert swap_qat_modules(model, graphs, fake_quant_factory,
                            transposed_convs=False) == ['conv']


@pytest.mark.parametrize('quantizer, quantized', [
    (OpenVINOQuantizer, True),
    (TensorRTQuantizer, True),
    (TorchNativeQuantizer, True),
    (AcademicQuantizer, True),
    (RKNNQuantizer, False),
    (LiteRTQuantizer, False),
    (NCNNQuantizer, False),
])
def test_which_backends_quantize_transposed_conv_weights(
        quantizer, quantized):
    """Each backend says whether its deploy path takes a transposed
    conv's weights on axis 1 (the ones that cannot give the reason next
    to the attribute)."""
    assert quantizer.quantizes_transposed_convs is quantized
