"""A histogram whose range grows with the data, for calibration observers."""
import math
from typing import List, Optional, Tuple

import torch
from torch import Tensor

from mmrazor_quant.structures.quantization import QSchema, calculate_qparams
from mmrazor_quant.utils.threads import one_cpu_thread
from .base import BaseObserver
from .utils import interp

__all__ = ['BaseHistogramObserver', 'rebin_histogram']


def rebin_histogram(hist: Tensor, old_lo: float, old_hi: float,
                    new_lo: float, new_hi: float) -> Tensor:
    """Move counts from ``bins`` equal bins over ``[old_lo, old_hi]`` onto
    ``bins`` equal bins over ``[new_lo, new_hi]`` (which contains the old
    range), assuming values are uniform within each old bin.

    With ``F`` the piecewise-linear cumulative count through the old edges,
    new bin ``j`` gets ``F(E_{j+1}) - F(E_j)`` for the new edges ``E``; the
    total count is preserved.
    """
    bins = hist.numel()
    kwargs = dict(dtype=torch.float64, device=hist.device)
    old_edges = torch.linspace(old_lo, old_hi, bins + 1, **kwargs)
    new_edges = torch.linspace(new_lo, new_hi, bins + 1, **kwargs)
    cdf = torch.cat([hist.new_zeros(1), hist.cumsum(0)])
    return torch.diff(interp(new_edges, old_edges, cdf.double())).to(hist)


def _memory_offsets(index: Tensor, x: Tensor, flat: Tensor) -> Tensor:
    """Where the values at row-major positions ``index`` of ``x`` lie in
    ``flat``: ``flat`` is ``x``'s memory in order (a channels-last batch
    read without a copy, see :func:`~.base.flat_in_memory_order`) or, for
    a layout that is not dense, a row-major copy."""
    if x.is_contiguous() or flat.stride(0) != 1 \
            or flat.data_ptr() != x.data_ptr():
        return index  # ``flat`` is row-major
    sizes, strides = _coalesced_dims(x)
    if x.numel() < 2**31:
        index = index.int()  # integer division at twice the speed
    offsets = index.new_zeros(())
    for size, stride in zip(sizes[:0:-1], strides[:0:-1]):
        outer = torch.div(index, size, rounding_mode='floor')
        offsets = offsets + (index - outer * size) * stride
        index = outer
    return (offsets + index * strides[0]).long()


def _coalesced_dims(x: Tensor) -> Tuple[List[int], List[int]]:
    """Sizes and strides of ``x`` with size-1 dims dropped and neighbours
    that are neighbours in memory too merged (a channels-last batch: N,
    C, H*W), so that each row-major position splits with fewest
    divisions."""
    sizes: List[int] = []
    strides: List[int] = []
    for size, stride in zip(x.shape, x.stride()):
        if size == 1:
            continue
        if sizes and strides[-1] == size * stride:
            sizes[-1] *= size
            strides[-1] = stride
        else:
            sizes.append(size)
            strides.append(stride)
    return sizes or [1], strides or [1]


class BaseHistogramObserver(BaseObserver):
    """Accumulate a ``bins``-bin histogram over a range that grows.

    Buffers: ``histogram`` (float64 counts), ``hist_min``/``hist_max`` (its
    range) and ``min_val``/``max_val`` (the data's extremes). When a batch
    falls outside ``[hist_min, hist_max]`` the range is widened to cover it
    and the old counts are re-binned (:func:`rebin_histogram`).

    Distributed: the ranks first all-reduce the batch min/max, so they widen
    to the same range, then sum their batch histograms; every rank then
    holds the histogram of the union of the batches.

    Subclasses choose what is binned (:meth:`_hist_input`, e.g. ``|x|``) and
    over which range (:meth:`_hist_bounds`), and implement
    :meth:`_search_range`.

    ``max_binned`` bounds the cost of large activations (a detector's
    640 x 640 maps hold tens of millions of values a batch, and binning is
    the slowest part of calibration): a batch with more values bins a
    uniform random sample of ``max_binned`` of them (seeded, so calibration
    is repeatable) and weights its counts by ``numel / max_binned``
    (the values it picks are read where they lie in memory: a channels-last
    batch is not copied). The
    extremes ``min_val``/``max_val`` and the histogram's range still come
    from every value; only the counts inside the range are estimated, each
    bin to a relative error of about ``1 / sqrt(its sampled count)``.

    Args:
        qscheme (QSchema, optional): The scheme. Defaults to ``QSchema()``.
        bins (int): Number of bins. Defaults to 2048.
        max_binned (int, optional): Most values of one batch binned (see
            above). Defaults to None (all of them).

    Raises:
        ValueError: If ``bins`` is not an int >= 2 or ``max_binned`` not a
            positive int.
    """

    defers_qparams = True
    reads_order_free = True

    def __init__(self,
                 qscheme: Optional[QSchema] = None,
                 bins: int = 2048,
                 max_binned: Optional[int] = None) -> None:
        super().__init__(qscheme)
        if isinstance(bins, bool) or not isinstance(bins, int) or bins < 2:
            raise ValueError(f'{type(self).__name__}: bins must be an int '
                             f'>= 2, got {bins!r}')
        if max_binned is not None and (isinstance(max_binned, bool)
                                       or not isinstance(max_binned, int)
                                       or max_binned < 1):
            raise ValueError(f'{type(self).__name__}: max_binned must be a '
                             f'positive int or None, got {max_binned!r}')
        self.bins = bins
        self.max_binned = max_binned
        self._sampler: Optional[torch.Generator] = None
        self._register_stat('min_val', math.inf)
        self._register_stat('max_val', -math.inf)
        # float64 so the stored range is exactly the one the counts use.
        self._register_stat('hist_min', math.inf, torch.float64)
        self._register_stat('hist_max', -math.inf, torch.float64)
        self.register_buffer('histogram',
                             torch.zeros(bins, dtype=torch.float64))

    @property
    def has_observed(self) -> bool:
        return bool(self.min_val <= self.max_val)

    def reset(self) -> None:
        super().reset()
        self.histogram.zero_()

    def _hist_input(self, x: Tensor) -> Tensor:
        """The values to bin (``x`` itself here)."""
        return x

    def _hist_bounds(self, min_val: Tensor,
                     max_val: Tensor) -> Tuple[float, float]:
        """The histogram range needed for data in ``[min_val, max_val]``."""
        return float(min_val), float(max_val)

    def _observe(self, x: Tensor) -> None:
        x = x.float()
        flat = self._channel_view(x)
        min_val, max_val = self._reduce_min_max(*torch.aminmax(flat))
        self.min_val = torch.minimum(self.min_val, min_val)
        self.max_val = torch.maximum(self.max_val, max_val)
        lo, hi = self._grow_range(*self._hist_bounds(min_val, max_val))
        values, weight = self._binned_values(x, flat)
        batch = torch.histc(self._hist_input(values), self.bins, lo, hi)
        self.histogram += self._all_reduce(batch.double() * weight, 'sum')

    def _binned_values(self, x: Tensor, flat: Tensor) -> Tuple[Tensor, float]:
        """The values to bin and the weight of each one's count: all of
        ``x`` (``flat``, its values in memory order), or ``max_binned`` of
        them drawn uniformly (``x.reshape(-1)[index]``, read where they lie
        in ``flat``)."""
        numel = flat.numel()
        if self.max_binned is None or numel <= self.max_binned:
            return flat, 1.
        if self._sampler is None or self._sampler.device != x.device:
            self._sampler = torch.Generator(x.device).manual_seed(0)
        index = torch.randint(
            numel, (self.max_binned, ),
            generator=self._sampler,
            device=x.device)
        return flat[_memory_offsets(index, x, flat)], numel / self.max_binned

    def _grow_range(self, lo: float, hi: float) -> Tuple[float, float]:
        """Widen the histogram to cover ``[lo, hi]``; returns the range."""
        old_lo, old_hi = float(self.hist_min), float(self.hist_max)
        if old_lo <= old_hi:  # the histogram already holds counts
            lo, hi = min(lo, old_lo), max(hi, old_hi)
        if hi - lo <= 0:
            # Constant data: give the bins a width, never a zero division.
            hi = lo + max(abs(lo), 1.) * 1e-6
        if (lo, hi) != (old_lo, old_hi):
            if old_lo <= old_hi:
                self.histogram.copy_(
                    rebin_histogram(self.histogram, old_lo, old_hi, lo, hi))
            self.hist_min.fill_(lo)
            self.hist_max.fill_(hi)
        return lo, hi

    def bin_edges(self) -> Tensor:
        """The ``bins + 1`` edges of the histogram (float64)."""
        return torch.linspace(
            float(self.hist_min),
            float(self.hist_max),
            self.bins + 1,
            dtype=torch.float64,
            device=self.histogram.device)

    def _search_range(self) -> Tuple[Tensor, Tensor]:
        """The subclass's ``(lo, hi)`` choice from the histogram."""
        raise NotImplementedError

    def clip_range(self) -> Tuple[Tensor, Tensor]:
        """The chosen ``(lo, hi)`` range, within ``[min_val, max_val]``.

        Raises:
            ValueError: If nothing was observed.
        """
        self._require_observed()
        with one_cpu_thread(self.histogram.device):
            lo, hi = self._search_range()
        return (torch.maximum(lo.float(), self.min_val),
                torch.minimum(hi.float(), self.max_val))

    def calculate_qparams(self) -> Tuple[Tensor, Tensor]:
        """``calculate_qparams(*self.clip_range(), qscheme)``.

        Raises:
            ValueError: If nothing was observed.
        """
        return calculate_qparams(*self.clip_range(), self.qscheme)

    def extra_repr(self) -> str:
        sampled = '' if self.max_binned is None \
            else f', max_binned={self.max_binned}'
        return f'{super().extra_repr()}, bins={self.bins}{sampled}'
