"""Minimal min/max observers so the fake-quant tests do not depend on the
concrete observers (which are tested on their own)."""
import torch
from torch import Tensor

from mmrazor_quant.models.observers.base import BaseObserver
from mmrazor_quant.structures.quantization import QSchema, calculate_qparams


class ToyMinMaxObserver(BaseObserver):
    """Running min/max over everything seen."""

    def __init__(self, qscheme: QSchema = None) -> None:
        super().__init__(qscheme)
        shape = (0, ) if self.per_channel else ()
        self.register_buffer('min_val', torch.full(shape, float('inf')))
        self.register_buffer('max_val', torch.full(shape, float('-inf')))

    def _reduce(self, x: Tensor):
        return x.min(), x.max()

    def _observe(self, x: Tensor) -> None:
        lo, hi = self._reduce(x)
        if self.min_val.shape != lo.shape:
            self.min_val = torch.full_like(lo, float('inf'))
            self.max_val = torch.full_like(hi, float('-inf'))
        self.min_val = torch.minimum(self.min_val, lo)
        self.max_val = torch.maximum(self.max_val, hi)

    def _load_from_state_dict(self, state_dict, prefix, *args, **kwargs):
        for name in ('min_val', 'max_val'):
            if prefix + name in state_dict:
                setattr(self, name, torch.empty_like(state_dict[prefix + name]))
        super()._load_from_state_dict(state_dict, prefix, *args, **kwargs)

    @property
    def has_observed(self) -> bool:
        return bool(torch.isfinite(self.min_val).all())

    def calculate_qparams(self):
        return calculate_qparams(self.min_val, self.max_val, self.qscheme)


class ToyPerChannelMinMaxObserver(ToyMinMaxObserver):
    """Min/max per slice along ``qscheme.ch_axis``."""
    per_channel = True

    def _reduce(self, x: Tensor):
        flat = x.movedim(self.ch_axis, 0).flatten(1)
        return flat.min(dim=1).values, flat.max(dim=1).values


def observer(per_channel: bool = False, **qscheme) -> ToyMinMaxObserver:
    """A toy observer with the scheme ``QSchema(**qscheme)``."""
    cls = ToyPerChannelMinMaxObserver if per_channel else ToyMinMaxObserver
    return cls(QSchema(is_per_channel=per_channel, **qscheme))
