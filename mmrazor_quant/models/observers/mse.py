"""Observers that search the clipping range minimising the Lp error."""
from typing import Optional

import torch
from torch import Tensor

from mmrazor_quant.registry import MODELS
from mmrazor_quant.structures.quantization import QSchema
from .minmax import MinMaxObserver
from .utils import clip_ratio_candidates, lp_clip_errors

__all__ = ['MSEObserver', 'PerChannelMSEObserver']


@MODELS.register_module()
class MSEObserver(MinMaxObserver):
    """Grid-search a clipping ratio of the batch min/max.

    For each batch ``x`` (per channel ``c`` for the per-channel variant) with
    extremes ``m, M`` and ratios ``alpha_k = k / K``, ``k = 1..K``:

    ``k* = argmin_k sum |x - fq(x; [alpha_k m, alpha_k M])| ** p``

    where ``fq`` fake-quantizes with :func:`calculate_qparams` of that
    range. ``min_val``/``max_val`` keep the running extremes of the chosen
    ranges ``alpha_k* m`` / ``alpha_k* M``; qparams follow from them. Ties
    keep the larger ratio.

    Distributed: ranks agree on ``m, M`` first, then sum their per-candidate
    errors, so they pick the ratio that is best for the union of batches.

    Args:
        qscheme (QSchema, optional): The scheme. Defaults to ``QSchema()``.
        p (float): Norm exponent, > 0. Defaults to 2.0.
        num_candidates (int): Number of ratios ``K``. Defaults to 100.

    Raises:
        ValueError: If ``p <= 0`` or ``num_candidates < 1``.
    """

    reads_order_free = False  # sums of errors

    def __init__(self,
                 qscheme: Optional[QSchema] = None,
                 p: float = 2.0,
                 num_candidates: int = 100) -> None:
        super().__init__(qscheme)
        name = type(self).__name__
        if not p > 0:
            raise ValueError(f'{name}: p must be > 0, got {p!r}')
        if not isinstance(num_candidates, int) or num_candidates < 1:
            raise ValueError(f'{name}: num_candidates must be a positive '
                             f'int, got {num_candidates!r}')
        self.p = float(p)
        self.num_candidates = num_candidates

    def _observe(self, x: Tensor) -> None:
        x = self._prepare(x)
        x2d = x if self.per_channel else x[None]
        min_val, max_val = self._reduce_min_max(*torch.aminmax(x2d, dim=-1))
        alphas = clip_ratio_candidates(self.num_candidates, x.device)
        errors = lp_clip_errors(x2d, min_val, max_val, alphas, self.qscheme,
                                self.p)
        errors = self._all_reduce(errors, 'sum')
        best = alphas[errors.argmin(0)]
        shape = self.min_val.shape
        self._update((best * min_val).reshape(shape),
                     (best * max_val).reshape(shape))

    def extra_repr(self) -> str:
        return (f'{super().extra_repr()}, p={self.p}, '
                f'num_candidates={self.num_candidates}')


@MODELS.register_module()
class PerChannelMSEObserver(MSEObserver):
    """:class:`MSEObserver` searching one ratio per slice along
    ``qscheme.ch_axis``; buffers start empty and take their size from the
    first tensor or a loaded state dict.

    Args:
        qscheme (QSchema, optional): A per-channel scheme. Defaults to
            ``QSchema(is_per_channel=True)``.
        p (float): Norm exponent. Defaults to 2.0.
        num_candidates (int): Number of ratios. Defaults to 100.
    """
    per_channel = True
