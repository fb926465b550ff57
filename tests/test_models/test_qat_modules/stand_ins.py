"""Test-local weight fake quant: per-channel symmetric 8-bit, min-max on the
current weight (``[-127, 127]``), via ``torch.fake_quantize_per_channel_affine``.

Kept local so these tests pin the QAT modules' own math, independently of the
project's concrete fake quants.
"""
from typing import Tuple

import torch
from torch import Tensor, nn

from mmrazor_quant.models.fake_quants.base import BaseFakeQuantize
from mmrazor_quant.models.observers.base import BaseObserver
from mmrazor_quant.structures.quantization import QSchema

W_QSCHEME = QSchema(
    qdtype='qint8',
    bit=8,
    is_symmetry=True,
    is_symmetric_range=True,
    is_per_channel=True)


class _NullObserver(BaseObserver):
    per_channel = True

    def _observe(self, x: Tensor) -> None:
        pass


def per_channel_fake_quant(w: Tensor) -> Tensor:
    """The reference: ``round(w / s).clamp(-127, 127) * s`` with
    ``s = max|w| / 127`` per output channel."""
    scale = (w.detach().abs().flatten(1).amax(1) / 127).clamp(min=1e-8)
    zero_point = torch.zeros_like(scale, dtype=torch.int32)
    return torch.fake_quantize_per_channel_affine(w, scale, zero_point, 0,
                                                  -127, 127)


class StandInFakeQuantize(BaseFakeQuantize):
    """Per-channel symmetric min-max weight fake quant."""

    def __init__(self) -> None:
        super().__init__(_NullObserver(W_QSCHEME), W_QSCHEME)
        self.register_buffer('scale', torch.ones(0))
        self.register_buffer('zero_point', torch.zeros(0, dtype=torch.int32))
        self.shape_calls = []

    def init_qparams_shape(self, num_channels: int) -> None:
        self.shape_calls.append(num_channels)
        self.scale = torch.ones(num_channels)
        self.zero_point = torch.zeros(num_channels, dtype=torch.int32)

    def get_qparams(self) -> Tuple[Tensor, Tensor]:
        return self.scale, self.zero_point

    def forward(self, x: Tensor) -> Tensor:
        if not self.fake_quant_enabled[0]:
            return x
        return per_channel_fake_quant(x)


def stand_in_factory(name: str, module: nn.Module) -> StandInFakeQuantize:
    return StandInFakeQuantize()


def set_fake_quant(model: nn.Module, enabled: bool) -> None:
    for module in model.modules():
        if isinstance(module, BaseFakeQuantize):
            module.enable_fake_quant(enabled)


def randomize_bn(bn: nn.Module, seed: int = 0) -> nn.Module:
    """Non-trivial affine parameters and running statistics."""
    g = torch.Generator().manual_seed(seed)
    n = bn.num_features
    with torch.no_grad():
        bn.weight.copy_(torch.rand(n, generator=g) * 1.5 + 0.25)
        bn.weight[0] = -bn.weight[0]  # a negative gamma flips the fold
        bn.bias.copy_(torch.randn(n, generator=g))
        bn.running_mean.copy_(torch.randn(n, generator=g) * 0.5)
        bn.running_var.copy_(torch.rand(n, generator=g) + 0.5)
    return bn
