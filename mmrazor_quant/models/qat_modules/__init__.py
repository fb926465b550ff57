"""QAT modules: float layers (convs, transposed convs, linears) whose
weights are fake-quantized, alone or with a folded BN / fused ReLU."""
from .base import BaseQATModule, is_qat_module
from .bn_fold import FusedBnMixin
from .conv import (
                   ConvReLU1d,
                   ConvReLU2d,
                   ConvReLU3d,
                   QATConv1d,
                   QATConv2d,
                   QATConv3d,
)
from .conv_bn import ConvBn2d, ConvBnReLU2d
from .conv_transpose import (
    QATConvTranspose1d,
    QATConvTranspose2d,
    QATConvTranspose3d,
    conv_transpose_forward,
    is_swappable_conv_transpose,
)
from .linear import LinearReLU, QATLinear
from .linear_bn import LinearBn1d, LinearBnReLU1d
from .utils import freeze_bn_stats, update_bn_stats

__all__ = [
    'QATConv1d', 'QATConv2d', 'QATConv3d', 'ConvReLU1d', 'ConvReLU2d',
    'ConvReLU3d', 'QATConvTranspose1d', 'QATConvTranspose2d',
    'QATConvTranspose3d', 'conv_transpose_forward',
    'is_swappable_conv_transpose', 'ConvBn2d', 'ConvBnReLU2d', 'QATLinear',
    'LinearReLU', 'LinearBn1d', 'LinearBnReLU1d', 'FusedBnMixin',
    'freeze_bn_stats', 'update_bn_stats', 'BaseQATModule', 'is_qat_module'
]
