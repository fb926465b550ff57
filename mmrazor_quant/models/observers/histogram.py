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
      centres ``c_j`` with counts ``n_j``. With ``symmetric_tolerance=t``
      and an asymmetric qscheme on data with both signs, the best range of
      the two grids without a zero-point to compensate is taken instead
      when its error is at most ``1 + t`` times the asymmetric one's: the
      signed grid (``[-128 s, 127 s]``, zero-point 128, written as int8
      with zero-point 0) or the unsigned one from 0 (``[0, 255 s]``,
      zero-point 0, negatives clipped). A kernel with an input
      zero-point compensates it on every call (OpenVINO's u8 depthwise
      convs, see :class:`~mmrazor_quant.models.quantizers.
      OpenVINOQuantizer`).

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
        symmetric_tolerance (float, optional): For ``'mse'``: the relative
            error a grid without a zero-point may add (see above).
            Defaults to None (the asymmetric range as searched).

    Raises:
        ValueError: If ``method``, ``percentile``, ``num_candidates``,
            ``bins`` or ``symmetric_tolerance`` is out of range.
    """

    def __init__(self,
                 qscheme: Optional[QSchema] = None,
                 bins: int = 2048,
                 method: str = 'percentile',
                 percentile: float = 99.99,
                 num_candidates: int = 100,
                 max_binned: Optional[int] = None,
                 symmetric_tolerance: Optional[float] = None) -> None:
        super().__init__(qscheme, bins, max_binned)
        name = type(self).__name__
        if symmetric_tolerance is not None and not (
                method == 'mse' and symmetric_tolerance >= 0):
            raise ValueError(f'{name}: symmetric_tolerance must be a '
                             "non-negative float with method='mse', got "
                             f'{symmetric_tolerance!r} ({method!r})')
        self.symmetric_tolerance = symmetric_tolerance
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
        weights = self.histogram.float()[None]

        def best(lo: Tensor, hi: Tensor, qscheme: QSchema):
            errors = lp_clip_errors(centres, lo[None], hi[None], alphas,
                                    qscheme, 2.0, weights)[:, 0]
            k = errors.argmin()
            return float(errors[k]), alphas[k] * lo, alphas[k] * hi

        error, lo, hi = best(self.min_val, self.max_val, self.qscheme)
        if self.symmetric_tolerance is None or self.qscheme.is_symmetry \
                or not self.min_val < 0 < self.max_val:
            return lo, hi
        bound = (1 + self.symmetric_tolerance) * error
        signed, s_lo, s_hi = best(self.min_val, self.max_val,
                                  self.qscheme.replace(is_symmetry=True))
        unsigned, u_lo, u_hi = best(torch.zeros_like(self.min_val),
                                    self.max_val, self.qscheme)
        #: the histogram MSE of the three grids, for analysis
        self.grid_errors = dict(asymmetric=error, signed=signed,
                                unsigned=unsigned)
        if min(signed, unsigned) > bound:
            return lo, hi
        if unsigned <= signed:
            return u_lo, u_hi
        qmin, qmax = self.qscheme.quant_range
        step = torch.maximum(-s_lo, s_hi) / ((qmax - qmin) / 2)
        centre = (qmin + qmax + 1) // 2
        self._signed_grid = ((qmin - centre) * step, (qmax - centre) * step)
        return self._signed_grid

    def clip_range(self) -> Tuple[Tensor, Tensor]:
        """:meth:`BaseHistogramObserver.clip_range`, or the whole signed
        grid where ``symmetric_tolerance`` chose it (its ends lie outside
        the data on the side it does not reach)."""
        self._signed_grid = None
        lo, hi = super().clip_range()
        if self._signed_grid is not None:
            return self._signed_grid
        return lo, hi

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
        symmetric_tolerance (float, optional): See
            :class:`HistogramObserver`. Defaults to None.
    """

    def __init__(self,
                 qscheme: Optional[QSchema] = None,
                 bins: int = 2048,
                 num_candidates: int = 100,
                 max_binned: Optional[int] = None,
                 symmetric_tolerance: Optional[float] = None) -> None:
        super().__init__(qscheme, bins, 'mse', num_candidates=num_candidates,
                         max_binned=max_binned,
                         symmetric_tolerance=symmetric_tolerance)
