r"""What every QAT layer shares: a float layer whose weight is fake-quantized.

A QAT layer subclasses its float layer (``QATConv2d(BaseQATModule,
nn.Conv2d)``), so ``isinstance`` checks, initialisers and the float op keep
working, and computes

.. math::

    y = \mathrm{op}(x, \mathrm{fq}(W), b)

(then ``max(y, 0)`` where a ReLU is fused) with ``fq`` its
``weight_fake_quant``. A subclass supplies the float op
(:meth:`BaseQATModule._apply_weight`) and how to build a layer of the same
shape (:meth:`BaseQATModule._like`); :class:`~.bn_fold.FusedBnMixin` adds a
folded BN on top.
"""
from typing import ClassVar, Optional, Tuple

import torch.nn.functional as F
from torch import Tensor, nn

from mmrazor_quant.models.fake_quants.base import BaseFakeQuantize
from .utils import prepare_weight_fake_quant

__all__ = ['BaseQATModule', 'is_qat_module']


class BaseQATModule:
    """Behaviour shared by the QAT conv/linear layers; mixed in before the
    float layer class.

    Attributes:
        weight_fake_quant (BaseFakeQuantize): Fake quant of the weight.
    """

    #: Tracers keep this module as one ``call_module`` node.
    is_fx_leaf = True
    #: Whether ``max(., 0)`` follows the op.
    _with_relu: ClassVar[bool] = False
    #: The plain float layer class this module replaces.
    _float_cls: ClassVar[type] = nn.Module
    #: The weight's output-channel axis, along which per-channel qparams
    #: run (1 for a transposed conv's ``(in, out, k...)`` weight).
    _weight_ch_axis: ClassVar[int] = 0

    weight_fake_quant: BaseFakeQuantize

    @staticmethod
    def _like(layer_cls: type, layer: nn.Module) -> nn.Module:
        """An uninitialised ``layer_cls`` with ``layer``'s hyper-parameters,
        on the ``meta`` device (the caller assigns the parameters)."""
        raise NotImplementedError

    @classmethod
    def _float_name(cls) -> str:
        """How errors name the float class :meth:`from_float` takes."""
        return f'a {cls._float_cls.__name__}'

    @classmethod
    def from_float(cls, layer: nn.Module,
                   weight_fake_quant: BaseFakeQuantize) -> nn.Module:
        """Wrap a float layer, sharing its ``weight`` and ``bias``.

        Sharing (rather than copying) keeps a loaded float checkpoint and any
        optimizer built earlier pointing at the tensors that train.

        Args:
            layer (nn.Module): The float layer, of ``cls._float_cls``.
            weight_fake_quant (BaseFakeQuantize): Fake quant of the weight;
                per-channel qparams are sized to the layer's output
                channels and run along ``cls._weight_ch_axis``.

        Returns:
            The QAT layer, in ``layer``'s train/eval mode.

        Raises:
            TypeError: If ``layer`` is not a ``cls._float_cls`` or
                ``weight_fake_quant`` is not a BaseFakeQuantize.
        """
        return cls._wrap_float(layer, weight_fake_quant)

    @classmethod
    def _wrap_float(cls, layer: nn.Module,
                    weight_fake_quant: BaseFakeQuantize) -> nn.Module:
        if not isinstance(layer, cls._float_cls):
            raise TypeError(f'{cls.__name__}.from_float expects '
                            f'{cls._float_name()}, got '
                            f'{type(layer).__name__}')
        qat = cls._like(cls, layer)
        qat.weight = layer.weight
        qat.bias = layer.bias
        # Per-channel qparams follow the weight's output channels: axis 0
        # of a conv or linear, axis 1 of a transposed conv.
        qat.weight_fake_quant = prepare_weight_fake_quant(
            weight_fake_quant, layer.weight, cls._weight_ch_axis)
        return qat.train(layer.training)

    def _apply_weight(self, x: Tensor, weight: Tensor,
                      bias: Optional[Tensor]) -> Tensor:
        """The float op with a given weight and bias."""
        raise NotImplementedError

    def forward(self, x: Tensor) -> Tensor:
        """``op(x, fq(W), b)``, then ReLU where fused."""
        out = self._apply_weight(x, self.weight_fake_quant(self.weight),
                                 self.bias)
        return F.relu(out) if self._with_relu else out

    def get_folded_weight_bias(self) -> Tuple[Tensor, Optional[Tensor]]:
        """The float ``(weight, bias)`` an inference engine would use
        (detached; ``bias`` is None for a layer without bias)."""
        bias = None if self.bias is None else self.bias.detach()
        return self.weight.detach(), bias

    def to_float(self) -> nn.Module:
        """A plain float layer (in an ``nn.Sequential`` with ``nn.ReLU``
        where fused) computing this module with fake quant disabled."""
        weight, bias = self.get_folded_weight_bias()
        layer = self._like(self._float_cls, self)
        layer.weight = nn.Parameter(weight.clone())
        # A BN-fused layer gains a bias even if its float layer had none.
        layer.bias = None if bias is None else nn.Parameter(bias.clone())
        layer.train(self.training)
        return nn.Sequential(layer, nn.ReLU()) if self._with_relu else layer


def is_qat_module(module: object) -> bool:
    """Whether ``module`` is a QAT layer: a conv/linear with a
    fake-quantized weight, BN-fused or not (a :class:`BaseQATModule`)."""
    return isinstance(module, BaseQATModule)
