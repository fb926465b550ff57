r"""QAT convolutions: a float conv whose weight is fake-quantized.

``QATConv{1,2,3}d`` subclass ``nn.Conv{1,2,3}d`` (so ``isinstance`` checks,
``padding_mode`` and initialisers keep working) and compute

.. math::

    y = \mathrm{conv}(x, \mathrm{fq}(W)) + b

where ``fq`` is ``weight_fake_quant``. ``ConvReLU{1,2,3}d`` add
``max(y, 0)``.
"""
from typing import Optional

from torch import Tensor, nn

from mmrazor_quant.registry import MODELS
from .base import BaseQATModule

__all__ = [
    'QATConv1d', 'QATConv2d', 'QATConv3d', 'ConvReLU1d', 'ConvReLU2d',
    'ConvReLU3d'
]


def conv_like(cls: type, conv: nn.Module) -> nn.Module:
    """An uninitialised ``cls`` conv (or transposed conv) with ``conv``'s
    hyper-parameters.

    Built on the ``meta`` device: the caller assigns the parameters, so
    allocating and initialising fresh ones would be wasted work.
    """
    transposed = dict(output_padding=conv.output_padding) if isinstance(
        conv, nn.modules.conv._ConvTransposeNd) else {}
    return cls(
        conv.in_channels,
        conv.out_channels,
        conv.kernel_size,
        stride=conv.stride,
        padding=conv.padding,
        dilation=conv.dilation,
        groups=conv.groups,
        bias=conv.bias is not None,
        padding_mode=conv.padding_mode,
        device='meta',
        **transposed)


class _QATConvNd(BaseQATModule):
    """The QAT convs' float op; mixed into an ``nn.ConvNd``."""

    _like = staticmethod(conv_like)

    def _apply_weight(self, x: Tensor, weight: Tensor,
                      bias: Optional[Tensor]) -> Tensor:
        """The float op with a given weight and bias."""
        return self._conv_forward(x, weight, bias)


@MODELS.register_module()
class QATConv1d(_QATConvNd, nn.Conv1d):
    """``nn.Conv1d`` with a fake-quantized weight; see :class:`QATConv2d`."""
    _float_cls = nn.Conv1d


@MODELS.register_module()
class QATConv2d(_QATConvNd, nn.Conv2d):
    r"""``nn.Conv2d`` with a fake-quantized weight.

    .. math::

        y = \mathrm{conv2d}(x, \mathrm{fq}(W), b)

    Build it with :meth:`from_float`; the weight fake quant is the
    submodule ``weight_fake_quant``.

    Example:
        >>> qat = QATConv2d.from_float(nn.Conv2d(3, 8, 3), fake_quant)
        >>> conv = qat.to_float()  # plain nn.Conv2d for deploy
    """
    _float_cls = nn.Conv2d


@MODELS.register_module()
class QATConv3d(_QATConvNd, nn.Conv3d):
    """``nn.Conv3d`` with a fake-quantized weight; see :class:`QATConv2d`."""
    _float_cls = nn.Conv3d


@MODELS.register_module()
class ConvReLU1d(QATConv1d):
    """:class:`QATConv1d` followed by ReLU: ``max(conv1d(x, fq(W), b), 0)``."""
    _with_relu = True


@MODELS.register_module()
class ConvReLU2d(QATConv2d):
    """:class:`QATConv2d` followed by ReLU: ``max(conv2d(x, fq(W), b), 0)``."""
    _with_relu = True


@MODELS.register_module()
class ConvReLU3d(QATConv3d):
    """:class:`QATConv3d` followed by ReLU: ``max(conv3d(x, fq(W), b), 0)``."""
    _with_relu = True
