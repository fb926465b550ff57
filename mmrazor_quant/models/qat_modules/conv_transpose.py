r"""QAT transposed convolutions: a float ``nn.ConvTranspose{1,2,3}d`` whose
weight is fake-quantized per output channel.

.. math::

    y = \mathrm{conv\_transpose}(x, \mathrm{fq}(W)) + b

A transposed conv's weight is laid out ``(in, out / groups, k...)``: its
output channels are axis 1, so the per-channel qparams of ``fq`` run along
axis 1 (``ch_axis=1``, as NNCF writes an ONNX ``ConvTranspose``'s
weight; torch.ao's x86 qconfigs fall back to one scale per tensor), and
the exported ``DequantizeLinear`` of the weight carries ``axis=1``.
Only ``groups == 1`` layers are swapped (see
:func:`is_swappable_conv_transpose`): with groups, axis 1 holds
``out / groups`` entries, one scale shared by the same channel of every
group, which a per-output-channel bias grid does not describe.
"""
from typing import Optional

import torch.nn.functional as F
from torch import Tensor, nn

from mmrazor_quant.registry import MODELS
from .base import BaseQATModule
from .conv import conv_like

__all__ = [
    'QATConvTranspose1d', 'QATConvTranspose2d', 'QATConvTranspose3d',
    'conv_transpose_forward', 'is_swappable_conv_transpose'
]

_FUNCTIONS = {1: F.conv_transpose1d, 2: F.conv_transpose2d,
              3: F.conv_transpose3d}


def conv_transpose_forward(layer: nn.Module, x: Tensor, weight: Tensor,
                           bias: Optional[Tensor]) -> Tensor:
    """``layer``'s transposed conv of ``x`` with a given weight and bias
    (torch's ``ConvTranspose*d`` have no ``_conv_forward``)."""
    return _FUNCTIONS[len(layer.kernel_size)](
        x, weight, bias, layer.stride, layer.padding, layer.output_padding,
        layer.groups, layer.dilation)


def is_swappable_conv_transpose(layer: nn.Module) -> bool:
    """Whether ``layer`` is a transposed conv the quantizers give a
    fake-quantized weight: one without groups (see the module
    docstring)."""
    return isinstance(layer, nn.modules.conv._ConvTransposeNd) and \
        layer.groups == 1


class _QATConvTransposeNd(BaseQATModule):
    """The QAT transposed convs' float op; mixed into an
    ``nn.ConvTransposeNd``."""

    _like = staticmethod(conv_like)
    _weight_ch_axis = 1

    def _apply_weight(self, x: Tensor, weight: Tensor,
                      bias: Optional[Tensor]) -> Tensor:
        """The float op with a given weight and bias."""
        return conv_transpose_forward(self, x, weight, bias)


@MODELS.register_module()
class QATConvTranspose1d(_QATConvTransposeNd, nn.ConvTranspose1d):
    """``nn.ConvTranspose1d`` with a fake-quantized weight; see
    :class:`QATConvTranspose2d`."""
    _float_cls = nn.ConvTranspose1d


@MODELS.register_module()
class QATConvTranspose2d(_QATConvTransposeNd, nn.ConvTranspose2d):
    r"""``nn.ConvTranspose2d`` with a weight fake-quantized per output
    channel (axis 1 of its ``(in, out, kH, kW)`` weight).

    .. math::

        y = \mathrm{conv\_transpose2d}(x, \mathrm{fq}(W), b)

    Example:
        >>> qat = QATConvTranspose2d.from_float(
        ...     nn.ConvTranspose2d(8, 4, 2, stride=2), fake_quant)
        >>> qat.weight_fake_quant.ch_axis
        1
    """
    _float_cls = nn.ConvTranspose2d


@MODELS.register_module()
class QATConvTranspose3d(_QATConvTransposeNd, nn.ConvTranspose3d):
    """``nn.ConvTranspose3d`` with a fake-quantized weight; see
    :class:`QATConvTranspose2d`."""
    _float_cls = nn.ConvTranspose3d
