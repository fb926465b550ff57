r"""QAT linear layers: a float ``nn.Linear`` whose weight is fake-quantized.

.. math::

    y = x \, \mathrm{fq}(W)^T + b

``LinearReLU`` adds ``max(y, 0)``.
"""
from typing import ClassVar, Optional, Tuple

import torch.nn.functional as F
from torch import Tensor, nn

from mmrazor_quant.models.fake_quants.base import BaseFakeQuantize
from mmrazor_quant.registry import MODELS
from .utils import prepare_weight_fake_quant

__all__ = ['QATLinear', 'LinearReLU']


def linear_like(cls: type, linear: nn.Module) -> nn.Module:
    """An uninitialised ``cls`` linear with ``linear``'s shape (on ``meta``:
    the caller assigns the parameters)."""
    return cls(
        linear.in_features,
        linear.out_features,
        bias=linear.bias is not None,
        device='meta')


@MODELS.register_module()
class QATLinear(nn.Linear):
    r"""``nn.Linear`` with a fake-quantized weight.

    .. math::

        y = x \, \mathrm{fq}(W)^T + b

    Build it with :meth:`from_float`; the weight fake quant is the
    submodule ``weight_fake_quant``.
    """

    #: Tracers keep this module as one ``call_module`` node.
    is_fx_leaf = True
    #: Whether ``max(., 0)`` follows the linear.
    _with_relu: ClassVar[bool] = False

    weight_fake_quant: BaseFakeQuantize

    @classmethod
    def from_float(cls, linear: nn.Linear,
                   weight_fake_quant: BaseFakeQuantize) -> 'QATLinear':
        """Wrap a float linear, sharing its ``weight`` and ``bias``.

        Args:
            linear (nn.Linear): The float layer.
            weight_fake_quant (BaseFakeQuantize): Fake quant of the weight;
                per-channel qparams are sized to ``linear.out_features``.

        Returns:
            QATLinear: The QAT layer, in ``linear``'s train/eval mode.

        Raises:
            TypeError: If ``linear`` is not an ``nn.Linear`` or
                ``weight_fake_quant`` is not a BaseFakeQuantize.
        """
        return cls._wrap_float(linear, weight_fake_quant)

    @classmethod
    def _wrap_float(cls, linear: nn.Module,
                    weight_fake_quant: BaseFakeQuantize) -> 'QATLinear':
        if not isinstance(linear, nn.Linear):
            raise TypeError(f'{cls.__name__}.from_float expects an '
                            f'nn.Linear, got {type(linear).__name__}')
        qat = linear_like(cls, linear)
        qat.weight = linear.weight
        qat.bias = linear.bias
        qat.weight_fake_quant = prepare_weight_fake_quant(
            weight_fake_quant, linear.out_features, linear.weight)
        return qat.train(linear.training)

    def _apply_weight(self, x: Tensor, weight: Tensor,
                      bias: Optional[Tensor]) -> Tensor:
        """The float op with a given weight and bias."""
        return F.linear(x, weight, bias)

    def forward(self, x: Tensor) -> Tensor:
        """``x fq(W)^T + b``, then ReLU for ``LinearReLU``."""
        out = self._apply_weight(x, self.weight_fake_quant(self.weight),
                                 self.bias)
        return F.relu(out) if self._with_relu else out

    def get_folded_weight_bias(self) -> Tuple[Tensor, Optional[Tensor]]:
        """The float ``(weight, bias)`` an inference engine would use
        (detached; ``bias`` is None for a layer without bias)."""
        bias = None if self.bias is None else self.bias.detach()
        return self.weight.detach(), bias

    def to_float(self) -> nn.Module:
        """A plain ``nn.Linear`` (in an ``nn.Sequential`` with ``nn.ReLU``
        where fused) computing this module with fake quant disabled."""
        weight, bias = self.get_folded_weight_bias()
        linear = nn.Linear(
            self.in_features,
            self.out_features,
            bias=bias is not None,
            device='meta')
        linear.weight = nn.Parameter(weight.clone())
        linear.bias = None if bias is None else nn.Parameter(bias.clone())
        linear.train(self.training)
        return nn.Sequential(linear, nn.ReLU()) if self._with_relu else linear


@MODELS.register_module()
class LinearReLU(QATLinear):
    """:class:`QATLinear` followed by ReLU: ``max(x fq(W)^T + b, 0)``."""
    _with_relu = True
