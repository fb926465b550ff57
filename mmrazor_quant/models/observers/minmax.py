"""Running min/max observers, per-tensor and per-channel."""
import math
from typing import Optional, Tuple

import torch
from torch import Tensor

from mmrazor_quant.registry import MODELS
from mmrazor_quant.structures.quantization import QSchema, calculate_qparams
from .base import BaseObserver

__all__ = ['MinMaxObserver', 'PerChannelMinMaxObserver']


@MODELS.register_module()
class MinMaxObserver(BaseObserver):
    """Track the running minimum and maximum of everything observed.

    After batches ``x_1 .. x_t``: ``min_val = min_i min(x_i)``,
    ``max_val = max_i max(x_i)``; qparams are
    ``calculate_qparams(min_val, max_val, qscheme)``.

    Under ``torch.distributed`` each batch's min/max are all-reduced
    (``MIN``/``MAX``) before the update, so all ranks agree.

    Args:
        qscheme (QSchema, optional): The scheme. Defaults to ``QSchema()``.

    Example:
        >>> obs = MinMaxObserver(QSchema(qdtype='quint8'))
        >>> _ = obs(torch.tensor([-1., 3.]))
        >>> obs.calculate_qparams()  # scale = 4 / 255, zp = round(255 / 4)
        (tensor(0.0157), tensor(64, dtype=torch.int32))
    """

    reads_order_free = True

    def __init__(self, qscheme: Optional[QSchema] = None) -> None:
        super().__init__(qscheme)
        self._register_stat('min_val', math.inf)
        self._register_stat('max_val', -math.inf)

    @property
    def has_observed(self) -> bool:
        return self.min_val.numel() > 0 and bool(
            (self.min_val <= self.max_val).all())

    def _observe(self, x: Tensor) -> None:
        self._observe_min_max(self._prepare(x))

    def _prepare(self, x: Tensor) -> Tensor:
        """:meth:`_channel_view` of ``x``; sizes per-channel buffers."""
        x = self._channel_view(x)
        if self.per_channel:
            self._ensure_channels(x.shape[0])
        return x

    def _observe_min_max(self, x: Tensor) -> None:
        """Reduce, all-reduce, check and fold in the min/max of ``x``."""
        if x.dim() == 1:
            min_val, max_val = torch.aminmax(x)
        else:
            # amin/amax along a dim are ~20x faster than aminmax(dim=) on
            # CPU (a scalar loop there), with the same values.
            min_val, max_val = x.amin(-1), x.amax(-1)
        min_val, max_val = self._reduce_min_max(min_val, max_val)
        self._update(min_val, max_val)

    def _update(self, min_val: Tensor, max_val: Tensor) -> None:
        """Fold one (reduced) batch's min/max into the running statistics."""
        self.min_val = torch.minimum(self.min_val, min_val)
        self.max_val = torch.maximum(self.max_val, max_val)

    def calculate_qparams(self) -> Tuple[Tensor, Tensor]:
        """``calculate_qparams(min_val, max_val, qscheme)``.

        Returns:
            tuple[Tensor, Tensor]: float32 scale and int32 zero-point.

        Raises:
            ValueError: If nothing was observed.
        """
        self._require_observed()
        return calculate_qparams(self.min_val, self.max_val, self.qscheme)


@MODELS.register_module()
class PerChannelMinMaxObserver(MinMaxObserver):
    """:class:`MinMaxObserver` with one min/max per slice along
    ``qscheme.ch_axis`` (reducing over all other dims).

    ``min_val``/``max_val`` start empty and take their length from the first
    tensor or from a loaded state dict.

    Args:
        qscheme (QSchema, optional): A per-channel scheme. Defaults to
            ``QSchema(is_per_channel=True)``.
    """
    per_channel = True
