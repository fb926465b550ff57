r"""QAT convolutions: a float conv whose weight is fake-quantized.

``QATConv{1,2,3}d`` subclass ``nn.Conv{1,2,3}d`` (so ``isinstance`` checks,
``padding_mode`` and initialisers keep working) and compute

.. math::

    y = \mathrm{conv}(x, \mathrm{fq}(W)) + b

where ``fq`` is ``weight_fake_quant``. ``ConvReLU{1,2,3}d`` add
``max(y, 0)``.
"""
from typing import ClassVar, Optional, Tuple

import torch.nn.functional as F
from torch import Tensor, nn

from mmrazor_quant.models.fake_quants.base import BaseFakeQuantize
from mmrazor_quant.registry import MODELS
from .utils import prepare_weight_fake_quant

__all__ = [
    'QATConv1d', 'QATConv2d', 'QATConv3d', 'ConvReLU1d', 'ConvReLU2d',
    'ConvReLU3d'
]


def conv_like(cls: type, conv: nn.Module) -> nn.Module:
    """An uninitialised ``cls`` conv with ``conv``'s hyper-parameters.

    Built on the ``meta`` device: the caller assigns the parameters, so
    allocating and initialising fresh ones would be wasted work.
    """
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
        device='meta')


class _QATConvNd:
    """Behaviour shared by the QAT convs; mixed into an ``nn.ConvNd``."""

    #: Tracers keep this module as one ``call_module`` node.
    is_fx_leaf = True
    #: Whether ``max(., 0)`` follows the conv.
    _with_relu: ClassVar[bool] = False
    #: The plain float conv class this module replaces.
    _float_conv_cls: ClassVar[type] = nn.Conv2d

    weight_fake_quant: BaseFakeQuantize

    @classmethod
    def from_float(cls, conv: nn.Module,
                   weight_fake_quant: BaseFakeQuantize) -> nn.Module:
        """Wrap a float conv, sharing its ``weight`` and ``bias`` parameters.

        Sharing (rather than copying) keeps a loaded float checkpoint and any
        optimizer built earlier pointing at the tensors that train.

        Args:
            conv (nn.ConvNd): The float conv, of ``cls._float_conv_cls``.
            weight_fake_quant (BaseFakeQuantize): Fake quant of the weight;
                per-channel qparams are sized to ``conv.out_channels``.

        Returns:
            The QAT conv, in ``conv``'s train/eval mode.

        Raises:
            TypeError: If ``conv`` is not a ``cls._float_conv_cls`` or
                ``weight_fake_quant`` is not a BaseFakeQuantize.
        """
        return cls._wrap_float(conv, weight_fake_quant)

    @classmethod
    def _wrap_float(cls, conv: nn.Module,
                    weight_fake_quant: BaseFakeQuantize) -> nn.Module:
        if not isinstance(conv, cls._float_conv_cls):
            raise TypeError(f'{cls.__name__}.from_float expects a '
                            f'{cls._float_conv_cls.__name__}, got '
                            f'{type(conv).__name__}')
        qat = conv_like(cls, conv)
        qat.weight = conv.weight
        qat.bias = conv.bias
        qat.weight_fake_quant = prepare_weight_fake_quant(
            weight_fake_quant, conv.out_channels, conv.weight)
        return qat.train(conv.training)

    def _apply_weight(self, x: Tensor, weight: Tensor,
                      bias: Optional[Tensor]) -> Tensor:
        """The float op with a given weight and bias."""
        return self._conv_forward(x, weight, bias)

    def forward(self, x: Tensor) -> Tensor:
        """``conv(x, fq(W)) + b``, then ReLU for ``ConvReLU*``."""
        out = self._apply_weight(x, self.weight_fake_quant(self.weight),
                                 self.bias)
        return F.relu(out) if self._with_relu else out

    def get_folded_weight_bias(self) -> Tuple[Tensor, Optional[Tensor]]:
        """The float ``(weight, bias)`` an inference engine would use
        (detached; ``bias`` is None for a conv without bias)."""
        bias = None if self.bias is None else self.bias.detach()
        return self.weight.detach(), bias

    def to_float(self) -> nn.Module:
        """A plain float conv (in an ``nn.Sequential`` with ``nn.ReLU`` for
        ``ConvReLU*``) computing this module with fake quant disabled."""
        weight, bias = self.get_folded_weight_bias()
        conv = conv_like(self._float_conv_cls, self)
        conv.weight = nn.Parameter(weight.clone())
        # A BN-fused conv gains a bias even if its float conv had none.
        conv.bias = None if bias is None else nn.Parameter(bias.clone())
        conv.train(self.training)
        return nn.Sequential(conv, nn.ReLU()) if self._with_relu else conv


@MODELS.register_module()
class QATConv1d(_QATConvNd, nn.Conv1d):
    """``nn.Conv1d`` with a fake-quantized weight; see :class:`QATConv2d`."""
    _float_conv_cls = nn.Conv1d


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
    _float_conv_cls = nn.Conv2d


@MODELS.register_module()
class QATConv3d(_QATConvNd, nn.Conv3d):
    """``nn.Conv3d`` with a fake-quantized weight; see :class:`QATConv2d`."""
    _float_conv_cls = nn.Conv3d


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
