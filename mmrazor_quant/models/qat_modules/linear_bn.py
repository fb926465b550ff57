"""Linear + BN1d (+ ReLU) fused for QAT; the math is in :mod:`.bn_fold`."""
from torch import nn

from mmrazor_quant.registry import MODELS
from .bn_fold import FusedBnMixin
from .linear import QATLinear

__all__ = ['LinearBn1d', 'LinearBnReLU1d']


@MODELS.register_module()
class LinearBn1d(FusedBnMixin, QATLinear):
    """``nn.Linear`` → ``nn.BatchNorm1d`` (on ``(N, C)`` outputs) with the BN
    folded into the fake-quantized weight; see :class:`ConvBn2d`."""
    _bn_cls = nn.BatchNorm1d


@MODELS.register_module()
class LinearBnReLU1d(LinearBn1d):
    """:class:`LinearBn1d` followed by ReLU."""
    _with_relu = True
