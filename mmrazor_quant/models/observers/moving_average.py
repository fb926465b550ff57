"""Exponential-moving-average min/max observers."""
from typing import Optional

import torch
from torch import Tensor

from mmrazor_quant.registry import MODELS
from mmrazor_quant.structures.quantization import QSchema
from .minmax import MinMaxObserver

__all__ = [
    'MovingAverageMinMaxObserver', 'MovingAveragePerChannelMinMaxObserver'
]


@MODELS.register_module()
class MovingAverageMinMaxObserver(MinMaxObserver):
    """Track an exponential moving average of the batch min/max.

    The first batch sets ``min_val``/``max_val``; each later batch with
    extremes ``m_t``/``M_t`` updates them with ``c = averaging_constant``:

    ``min_val <- min_val + c * (m_t - min_val)``,
    ``max_val <- max_val + c * (M_t - max_val)``.

    Args:
        qscheme (QSchema, optional): The scheme. Defaults to ``QSchema()``.
        averaging_constant (float): ``c`` in ``(0, 1]``. Defaults to 0.01.

    Raises:
        ValueError: If ``averaging_constant`` is not in ``(0, 1]``.
    """

    def __init__(self,
                 qscheme: Optional[QSchema] = None,
                 averaging_constant: float = 0.01) -> None:
        super().__init__(qscheme)
        if not 0 < averaging_constant <= 1:
            raise ValueError(f'{type(self).__name__}: averaging_constant must '
                             f'be in (0, 1], got {averaging_constant!r}')
        self.averaging_constant = float(averaging_constant)

    def _update(self, min_val: Tensor, max_val: Tensor) -> None:
        # Unobserved entries (min > max) take the batch values as they are.
        fresh = self.min_val > self.max_val
        c = self.averaging_constant
        self.min_val = torch.where(fresh, min_val,
                                   self.min_val + c * (min_val - self.min_val))
        self.max_val = torch.where(fresh, max_val,
                                   self.max_val + c * (max_val - self.max_val))

    def extra_repr(self) -> str:
        return (f'{super().extra_repr()}, '
                f'averaging_constant={self.averaging_constant}')


@MODELS.register_module()
class MovingAveragePerChannelMinMaxObserver(MovingAverageMinMaxObserver):
    """:class:`MovingAverageMinMaxObserver` with one min/max per slice along
    ``qscheme.ch_axis``; buffers start empty and take their size from the
    first tensor or a loaded state dict.

    Args:
        qscheme (QSchema, optional): A per-channel scheme. Defaults to
            ``QSchema(is_per_channel=True)``.
        averaging_constant (float): EMA constant in ``(0, 1]``.
            Defaults to 0.01.
    """
    per_channel = True
