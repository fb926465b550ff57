"""Conv + BN (+ ReLU) fused for QAT; the math is in :mod:`.bn_fold`."""
from torch import nn

from mmrazor_quant.registry import MODELS
from .bn_fold import FusedBnMixin
from .conv import QATConv2d

__all__ = ['ConvBn2d', 'ConvBnReLU2d']


@MODELS.register_module()
class ConvBn2d(FusedBnMixin, QATConv2d):
    """``nn.Conv2d`` → ``nn.BatchNorm2d`` with the BN folded into the
    fake-quantized weight.

    Frozen (or in eval mode) it computes
    ``conv2d(x, fq(W * s), b_fold)`` with
    ``s = gamma / sqrt(running_var + eps)`` and
    ``b_fold = beta + s * (b - running_mean)``; in train mode
    ``bn(conv2d(x, fq(W * s)) / s + b)`` with batch statistics.

    Example:
        >>> fused = ConvBn2d.from_float(conv, bn, weight_fake_quant)
        >>> fused.freeze_bn_stats()
        >>> deployed = fused.to_float()  # nn.Conv2d with W_fold, b_fold
    """
    _bn_cls = nn.BatchNorm2d


@MODELS.register_module()
class ConvBnReLU2d(ConvBn2d):
    """:class:`ConvBn2d` followed by ReLU."""
    _with_relu = True
