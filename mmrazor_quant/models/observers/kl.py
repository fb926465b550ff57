"""Entropy (KL-divergence) calibration, as TensorRT's entropy calibrator."""
from typing import Tuple

import torch
from torch import Tensor

from mmrazor_quant.registry import MODELS
from .histogram_base import BaseHistogramObserver

__all__ = ['KLObserver', 'kl_threshold_bins']

# Candidate thresholds evaluated at once (each is a row of `bins` values).
_ROWS_PER_BLOCK = 256


def _kl_divergences(hist: Tensor, kept: Tensor, num_levels: int) -> Tensor:
    """KL(P_i || Q_i) for each number of kept bins ``i`` in ``kept``.

    ``P_i`` is ``hist[:i]`` with the clipped tail added to its last bin;
    ``Q_i`` merges ``hist[:i]`` into ``num_levels`` groups of ``i //
    num_levels`` bins (the last group takes the rest) and spreads each
    group's count evenly over the bins where ``P_i`` is non-zero. Both are
    normalised; empty ``Q`` bins under non-empty ``P`` get a tiny mass.
    """
    bins = hist.numel()
    j = torch.arange(bins, device=hist.device)[None]
    i = kept[:, None]
    inside = j < i
    sliced = hist[None] * inside
    tail = hist.sum() - sliced.sum(1, keepdim=True)
    p = sliced.scatter_add(1, i - 1, tail)
    group = torch.div(j, i // num_levels, rounding_mode='floor')
    group = group.clamp(max=num_levels - 1).expand_as(p)
    non_empty = (p > 0) & inside
    rows = kept.numel()
    q_sum = hist.new_zeros(rows, num_levels).scatter_add(1, group, sliced)
    q_cnt = hist.new_zeros(rows, num_levels).scatter_add(
        1, group, non_empty.to(hist.dtype))
    q = torch.where(non_empty,
                    q_sum.gather(1, group) / q_cnt.gather(1, group).clamp(1),
                    torch.zeros_like(p))
    p = p / p.sum(1, keepdim=True)
    q = q / q.sum(1, keepdim=True).clamp_min(1e-30)
    ratio = p / q.clamp_min(1e-12)
    terms = torch.where(non_empty, p * torch.log(ratio.clamp_min(1e-30)),
                        torch.zeros_like(p))
    return terms.sum(1)


def kl_threshold_bins(hist: Tensor, num_levels: int) -> int:
    """Number of leading bins ``i`` (``num_levels <= i <= bins``) whose
    upper edge, used as the clipping threshold, minimises KL(P_i || Q_i).

    Args:
        hist (Tensor): Counts of ``|x|`` over ``[0, amax]``.
        num_levels (int): Quantization levels available for ``|x|``.

    Returns:
        int: The best ``i``; ``bins`` if ``num_levels >= bins``.
    """
    bins = hist.numel()
    if num_levels >= bins:
        return bins
    hist = hist.double()
    kept = torch.arange(num_levels, bins + 1, device=hist.device)
    divergences = torch.cat([
        _kl_divergences(hist, kept[s:s + _ROWS_PER_BLOCK], num_levels)
        for s in range(0, kept.numel(), _ROWS_PER_BLOCK)
    ])
    return int(kept[divergences.argmin()])


@MODELS.register_module()
class KLObserver(BaseHistogramObserver):
    """Entropy calibration: clip ``|x|`` at the threshold minimising the KL
    divergence between the reference and the quantized distributions.

    Keeps a histogram of ``|x|`` over ``[0, max|x|]`` (growing with the data,
    see :class:`BaseHistogramObserver`). For every threshold ``T_i = i *
    width`` with ``i`` from ``num_levels`` to ``bins`` it compares ``P_i``
    (the counts below ``T_i``, the clipped tail folded into the last bin)
    with ``Q_i`` (the same counts merged into ``num_levels`` levels and
    expanded back) and picks ``T = argmin_i KL(P_i || Q_i)``. The range is
    then ``[max(min_val, -T), min(max_val, T)]``.

    ``num_levels`` is the number of levels available to ``|x|``:
    ``qmax - qmin + 1`` for non-negative data on an unsigned or asymmetric
    scheme, half of that otherwise (128 for int8, as TensorRT).

    Args:
        qscheme (QSchema, optional): The scheme. Defaults to ``QSchema()``.
        bins (int): Number of histogram bins. Defaults to 2048.
    """

    def _hist_input(self, x: Tensor) -> Tensor:
        return x.abs()

    def _hist_bounds(self, min_val: Tensor,
                     max_val: Tensor) -> Tuple[float, float]:
        return 0., float(torch.maximum(-min_val, max_val))

    def num_levels(self) -> int:
        """Quantization levels available to ``|x|`` for the observed data."""
        qmin, qmax = self.qscheme.quant_range
        levels = qmax - qmin + 1
        one_sided = bool(self.min_val >= 0) and not (
            self.qscheme.is_symmetry and self.qscheme.is_signed)
        return levels if one_sided else levels // 2

    def _search_range(self) -> Tuple[Tensor, Tensor]:
        kept = kl_threshold_bins(self.histogram, self.num_levels())
        threshold = self.bin_edges()[kept].float()
        return -threshold, threshold

