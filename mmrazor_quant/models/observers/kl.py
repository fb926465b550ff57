"""Entropy (KL-divergence) calibration, as TensorRT's entropy calibrator."""
from typing import Tuple

import torch
from torch import Tensor

from mmrazor_quant.registry import MODELS
from .histogram_base import BaseHistogramObserver

__all__ = ['KLObserver', 'kl_threshold_bins']


def _kl_divergences(hist: Tensor, kept: Tensor, num_levels: int) -> Tensor:
    """KL(P_i || Q_i) for each number of kept bins ``i`` in ``kept``.

    ``P_i`` is ``hist[:i]`` with the clipped tail ``t_i`` added to its last
    bin; ``Q_i`` merges ``hist[:i]`` into ``num_levels`` groups of ``m = i //
    num_levels`` bins (the last group takes the rest) and spreads each
    group's count ``S_g`` evenly over its ``n_g`` bins where ``P_i > 0``.
    Both are normalised (by the total ``N`` and by ``sum(hist[:i])``); an
    empty ``Q`` bin under a non-empty ``P`` bin gets mass ``1e-12``.

    Since ``q`` is constant on the non-empty bins of a group,

    ``KL = sum_j P_j log P_j / N - log N - sum_g (P_g / N) log(q_g)``

    with ``P_g`` the group sums of ``P_i``, so prefix sums of ``h``,
    ``[h > 0]`` and ``h log h`` give every candidate in ``O(num_levels)``.
    """
    zero = hist.new_zeros(1)
    cum = torch.cat([zero, hist.cumsum(0)])
    cum_nonzero = torch.cat([zero, (hist > 0).to(hist).cumsum(0)])
    cum_hlogh = torch.cat([zero, torch.xlogy(hist, hist).cumsum(0)])
    total = cum[-1]
    i = kept[:, None]
    group = torch.arange(num_levels, device=hist.device)[None]
    is_last = group == num_levels - 1
    start = group * (i // num_levels)
    end = torch.where(is_last, i, start + i // num_levels)
    tail, last_bin = total - cum[i], hist[i - 1]
    q_sum = cum[end] - cum[start]
    # The tail can make an empty last bin non-empty in P.
    n_nonzero = cum_nonzero[end] - cum_nonzero[start] + (
        is_last & (last_bin == 0) & (tail > 0)).to(hist)
    p_sum = q_sum + tail * is_last
    q = q_sum / n_nonzero.clamp_min(1) / cum[i].clamp_min(1e-30)
    p_log_p = cum_hlogh[i - 1] + torch.xlogy(last_bin + tail, last_bin + tail)
    cross = torch.xlogy(p_sum, q.clamp_min(1e-12)).sum(1, keepdim=True)
    return ((p_log_p - cross) / total - torch.log(total))[:, 0]


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
    return int(kept[_kl_divergences(hist, kept, num_levels).argmin()])


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
        max_binned (int, optional): Most values of one batch binned; see
            :class:`BaseHistogramObserver`. Defaults to None (all).
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

