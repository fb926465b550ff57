r"""QAT linear layers: a float ``nn.Linear`` whose weight is fake-quantized.

.. math::

    y = x \, \mathrm{fq}(W)^T + b

``LinearReLU`` adds ``max(y, 0)``.
"""
from typing import Optional

import torch.nn.functional as F
from torch import Tensor, nn

from mmrazor_quant.registry import MODELS
from .base import BaseQATModule

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
class QATLinear(BaseQATModule, nn.Linear):
    r"""``nn.Linear`` with a fake-quantized weight.

    .. math::

        y = x \, \mathrm{fq}(W)^T + b

    Build it with :meth:`from_float`; the weight fake quant is the
    submodule ``weight_fake_quant``.
    """

    _float_cls = nn.Linear
    _like = staticmethod(linear_like)

    @classmethod
    def _float_name(cls) -> str:
        return 'an nn.Linear'

    def _apply_weight(self, x: Tensor, weight: Tensor,
                      bias: Optional[Tensor]) -> Tensor:
        """The float op with a given weight and bias."""
        return F.linear(x, weight, bias)


@MODELS.register_module()
class LinearReLU(QATLinear):
    """:class:`QATLinear` followed by ReLU: ``max(x fq(W)^T + b, 0)``."""
    _with_relu = True
