"""An observer whose threshold is a power of two."""
from typing import Optional, Tuple

import torch
from torch import Tensor

from mmrazor_quant.models.observers import BaseObserver
from mmrazor_quant.registry import MODELS
from mmrazor_quant.structures.quantization import QSchema

__all__ = ['PowerOfTwoMaxObserver']


@MODELS.register_module()
class PowerOfTwoMaxObserver(BaseObserver):
    """Running ``max |x|`` rounded up to a power-of-two threshold.

    ``t = 2^ceil(log2(max |x|))``, ``scale = t / 2^(b-1)`` for a signed
    scheme (``t / 2^b`` unsigned), zero-point 0. Per-tensor.

    Args:
        qscheme (QSchema, optional): A per-tensor scheme. Defaults to
            ``QSchema()``.
    """

    def __init__(self, qscheme: Optional[QSchema] = None) -> None:
        super().__init__(qscheme)
        self._register_stat('amax', 0.0)
        self._register_stat('count', 0.0)

    @property
    def has_observed(self) -> bool:
        return bool(self.count > 0)

    def _observe(self, x: Tensor) -> None:
        amax = x.detach().abs().max().float()
        self._all_reduce(amax, 'max')
        self._check_finite(amax)
        self.amax = torch.maximum(self.amax, amax)
        self.count = self.count + 1

    def log2_threshold(self) -> Tensor:
        """``ceil(log2(max |x|))`` (the smallest float32 normal if 0)."""
        self._require_observed()
        amax = self.amax.clamp(min=torch.finfo(torch.float32).tiny)
        return torch.ceil(torch.log2(amax))

    def calculate_qparams(self) -> Tuple[Tensor, Tensor]:
        levels = 2**(self.qscheme.bit - (1 if self.qscheme.is_signed else 0))
        scale = torch.exp2(self.log2_threshold()) / levels
        return scale.float(), torch.zeros((), dtype=torch.int32)

