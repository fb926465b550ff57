"""The deploy form of a QAT conv/linear: float layer, BN folded, weight on
the integer grid."""
from typing import Optional

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from mmrazor_quant.models.qat_modules import conv_transpose_forward
from .qdq_fake_quantize import QDQFakeQuantize

__all__ = ['WeightQuantizedLayer', 'from_qat_module']


class WeightQuantizedLayer(nn.Module):
    """``op(x, fq(W), b)`` (+ ReLU) with ``W`` already on the integer grid.

    ``W`` is stored dequantized, ``(q - z) * s``, rather than as the float
    weight: the exported ``QuantizeLinear`` divides by ``s`` while the
    simulation multiplies by ``1 / s``, which can round a float weight that
    lies on a tie differently; a weight already on the grid maps back to
    ``q`` exactly either way, and ``fq`` leaves it unchanged in PyTorch.

    Args:
        layer (nn.Module): Float ``nn.Conv{1,2,3}d``,
            ``nn.ConvTranspose{1,2,3}d`` or ``nn.Linear`` holding the folded
            bias; its weight is replaced by the on-grid one.
        weight_fake_quant (QDQFakeQuantize): Fixed qparams of the weight.
        with_relu (bool): Apply ReLU after the op. Defaults to False.
    """

    #: Tracers keep this module as one ``call_module`` node.
    is_fx_leaf = True
    #: Sum the products in float64 and round the sum once, before the bias,
    #: as an int8 kernel's int32 accumulator does (see
    #: :func:`~mmrazor_quant.deploy.runtime_arithmetic.exact_accumulation`).
    #: False sums in the input's dtype, as the training graph does.
    exact_accumulation = False

    def __init__(self,
                 layer: nn.Module,
                 weight_fake_quant: QDQFakeQuantize,
                 with_relu: bool = False) -> None:
        super().__init__()
        if not isinstance(layer, (nn.Linear, nn.modules.conv._ConvNd)):
            raise TypeError('WeightQuantizedLayer wraps a conv or linear, '
                            f'got {type(layer).__name__}')
        with torch.no_grad():
            layer.weight.copy_(weight_fake_quant(layer.weight))
        layer.weight.requires_grad_(False)
        weight_fake_quant.input_on_grid = True
        self.layer = layer
        self.weight_fake_quant = weight_fake_quant
        self.with_relu = with_relu

    @property
    def weight(self) -> Tensor:
        return self.layer.weight

    @property
    def bias(self) -> Optional[Tensor]:
        return self.layer.bias

    def forward(self, x: Tensor) -> Tensor:
        weight = self.weight_fake_quant(self.layer.weight)
        if self.exact_accumulation:
            out = self._exactly_accumulated(x, weight)
        else:
            out = self._op(x, weight, self.layer.bias)
        return F.relu(out) if self.with_relu else out

    def _op(self, x: Tensor, weight: Tensor,
            bias: Optional[Tensor]) -> Tensor:
        """The float layer's op with a given weight and bias."""
        if isinstance(self.layer, nn.Linear):
            return F.linear(x, weight, bias)
        if isinstance(self.layer, nn.modules.conv._ConvTransposeNd):
            return conv_transpose_forward(self.layer, x, weight, bias)
        return self.layer._conv_forward(x, weight, bias)

    def _exactly_accumulated(self, x: Tensor, weight: Tensor) -> Tensor:
        # Products of two float32 grid values are exact in float64 and so
        # are their sums here (far below 2 ** 53 steps): one rounding.
        out = self._op(x.double(), weight.double(), None).to(x.dtype)
        bias = self.layer.bias
        if bias is None:
            return out
        if isinstance(self.layer, nn.Linear):
            return out + bias
        return out + bias.reshape(-1, *[1] * (out.dim() - 2))


def from_qat_module(qat: nn.Module) -> WeightQuantizedLayer:
    """Convert a calibrated QAT module (``QATConv2d``, ``ConvBnReLU2d``,
    ``QATLinear``, ...) into its deploy form.

    Uses the module's ``to_float()`` (BN folded with running statistics)
    and freezes its ``weight_fake_quant``.

    Args:
        qat (BaseQATModule): A QAT layer (see
            :func:`~mmrazor_quant.models.qat_modules.is_qat_module`).

    Returns:
        WeightQuantizedLayer: In eval mode.

    Raises:
        RuntimeError: If its weight fake quant was never calibrated.
    """
    float_module = qat.to_float()
    with_relu = isinstance(float_module, nn.Sequential)
    layer = float_module[0] if with_relu else float_module
    fake_quant = QDQFakeQuantize.from_fake_quant(qat.weight_fake_quant)
    return WeightQuantizedLayer(layer.eval(), fake_quant, with_relu).eval()
