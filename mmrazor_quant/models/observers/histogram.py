"""Histogram calibration: percentile or MSE-optimal clipping."""
from typing import Optional, Tuple

import torch
from torch import Tensor

from mmrazor_quant.registry import MODELS
from mmrazor_quant.structures.quantization import QSchema
from .histogram_base import BaseHistogramObserver
from .utils import clip_ratio_candidates, interp, lp_clip_errors

__all__ = ['HistogramObserver', 'PercentileObserver', 'HistogramMSEObserver']

_METHODS = ('percentile', 'mse')


@MODELS.register_module()
class HistogramObserver(BaseHistogramObserver):
    """Pick the clip range from a histogram of all observed values.

    * ``method='percentile'``: with ``q = percentile / 100`` and ``F`` the
      empirical CDF (linear within a bin), ``hi = F^-1(q)`` and, if any
      value was negative, ``lo = F^-1(1 - q)`` (else ``lo = min_val``).
    * ``method='mse'``: for ``alpha_k = k / K`` (``K = num_candidates``) the
      range ``[alpha_k * min_val, alpha_k * max_val]`` minimising the
      expected squared error ``sum_j n_j (c_j - fq_k(c_j))^2`` over the bin
      centres ``c_j`` with counts ``n_j``.

    Args:
        qscheme (QSchema, optional): The scheme. Defaults to ``QSchema()``.
        bins (int): Number of bins. Defaults to 2048.
        method (str): ``'percentile'`` or ``'mse'``. Defaults to
            ``'percentile'``.
        percentile (float): Percentile in ``(50, 100]`` for
            ``'percentile'``. Defaults to 99.99.
        num_candidates (int): Number of clipping ratios for ``'mse'``.
            Defaults to 100.
        max_binned (int, optional): Most values of one batch binned; see
            :class:`BaseHistogramObserver`. Defaults to None (all).

    Raises:
        ValueError: If ``method``, ``percentile``, ``num_candidates`` or
            ``bins`` is out of range.
    """

    def __init__(self,
                 qscheme: Optional[QSchema] = None,
                 bins: int = 2048,
                 method: str = 'percentile',
                 percentile: float = 99.99,
                 num_candidates: int = 100,
                 max_binned: Optional[int] = None) -> None:
        super().__init__(qscheme, bins, max_binned)
        name = type(self).__name__
        if method not in _METHODS:
            raise ValueError(f'{name}: method must be one of {_METHODS}, '
                             f'got {method!r}')
        if not 50 < percentile <= 100:
            raise ValueError(f'{name}: percentile must be in (50, 100], got '
                             f'{percentile!r}')
        if not isinstance(num_candidates, int) or num_candidates < 1:
            raise ValueError(f'{name}: num_candidates must be a positive '
                             f'int, got {num_candidates!r}')
        self.method = method
        self.percentile = float(percentile)
        self.num_candidates = num_candidates

    def _search_range(self) -> Tuple[Tensor, Tensor]:
        if self.method == 'mse':
            return self._mse_range()
        return self._percentile_range()

    def quantile(self, q: float) -> Tensor:
        """The value below which a fraction ``q`` of the counts lies."""
        hist = self.histogram
        cdf = torch.cat([hist.new_zeros(1), hist.cumsum(0)])
        target = (cdf[-1] * q).reshape(1)
        return interp(target, cdf, self.bin_edges())[0].float()

    def _percentile_range(self) -> Tuple[Tensor, Tensor]:
        q = self.percentile / 100
        hi = self.quantile(q)
        # Non-negative data (e.g. after ReLU) keeps its minimum, 0.
        lo = self.quantile(1 - q) if self.min_val < 0 else self.min_val
        return lo, hi

    def _mse_range(self) -> Tuple[Tensor, Tensor]:
        edges = self.bin_edges().float()
        centres = ((edges[:-1] + edges[1:]) / 2)[None]
        alphas = clip_ratio_candidates(self.num_candidates, edges.device)
        errors = lp_clip_errors(centres, self.min_val[None],
                                self.max_val[None], alphas, self.qscheme,
                                2.0, self.histogram.float()[None])
        best = alphas[errors[:, 0].argmin()]
        return best * self.min_val, best * self.max_val

    def extra_repr(self) -> str:
        extra = (f'percentile={self.percentile}' if self.method == 'percentile'
                 else f'num_candidates={self.num_candidates}')
        return f'{super().extra_repr()}, method={self.method}, {extra}'


@MODELS.register_module()
class PercentileObserver(HistogramObserver):
    """:class:`HistogramObserver` with ``method='percentile'``.

    Args:
        qscheme (QSchema, optional): The scheme. Defaults to ``QSchema()``.
        bins (int): Number of bins. Defaults to 2048.
        percentile (float): Percentile in ``(50, 100]``. Defaults to 99.99.
        max_binned (int, optional): Most values of one batch binned; see
            :class:`BaseHistogramObserver`. Defaults to None (all).
    """

    def __init__(self,
                 qscheme: Optional[QSchema] = None,
                 bins: int = 2048,
                 percentile: float = 99.99,
                 max_binned: Optional[int] = None) -> None:
        super().__init__(qscheme, bins, 'percentile', percentile,
                         max_binned=max_binned)


@MODELS.register_module()
class HistogramMSEObserver(HistogramObserver):
    """:class:`HistogramObserver` with ``method='mse'``.

    Args:
        qscheme (QSchema, optional): The scheme. Defaults to ``QSchema()``.
        bins (int): Number of bins. Defaults to 2048.
        num_candidates (int): Number of clipping ratios. Defaults to 100.
        max_binned (int, optional): Most values of one batch binned; see
            :class:`BaseHistogramObserver`. Defaults to None (all).
    """

    def __init__(self,
                 qscheme: Optional[QSchema] = None,
                 bins: int = 2048,
                 num_candidates: int = 100,
                 max_binned: Optional[int] = None) -> None:
        super().__init__(qscheme, bins, 'mse', num_candidates=num_candidates,
                         max_binned=max_binned)
