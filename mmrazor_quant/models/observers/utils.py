"""Pure helpers shared by the search-based observers (MSE, histogram, KL)."""
from typing import Optional

import torch
from torch import Tensor

from mmrazor_quant.structures.quantization import (
    QSchema,
    RoundingPolicy,
    calculate_qparams,
)

__all__ = [
    'round_half', 'fake_quantize', 'clip_ratio_candidates', 'lp_clip_errors',
    'interp'
]

# Largest ``candidates x elements`` block evaluated at once (16 MB float32),
# so a search over a large activation never holds K copies of it.
_BLOCK_ELEMENTS = 2**22


def round_half(x: Tensor, rounding: RoundingPolicy) -> Tensor:
    """Round to the nearest integer with ``rounding`` deciding the ties.

    ``HALF_EVEN``: ``torch.round``; ``HALF_AWAY_FROM_ZERO``:
    ``sign(x) * floor(|x| + 0.5)``.
    """
    if rounding == RoundingPolicy.HALF_AWAY_FROM_ZERO:
        return torch.sign(x) * torch.floor(x.abs() + 0.5)
    return torch.round(x)


def fake_quantize(x: Tensor, scale: Tensor, zero_point: Tensor,
                  qscheme: QSchema) -> Tensor:
    """``(clamp(round(x / s) + z, qmin, qmax) - z) * s``, broadcasting.

    Args:
        x (Tensor): Values.
        scale (Tensor): Scales, broadcastable to ``x``.
        zero_point (Tensor): Zero-points, broadcastable to ``x``.
        qscheme (QSchema): Gives ``[qmin, qmax]`` and the rounding policy.

    Returns:
        Tensor: The fake-quantized values.
    """
    qmin, qmax = qscheme.quant_range
    zero_point = zero_point.to(x.dtype)
    q = round_half(x / scale, qscheme.rounding) + zero_point
    return (torch.clamp(q, qmin, qmax) - zero_point) * scale


def clip_ratio_candidates(num_candidates: int, device=None) -> Tensor:
    """Clipping ratios ``alpha_k = k / K`` for ``k = K, ..., 1``.

    Largest first: ``argmin`` returns the first minimum, so ties keep the
    least clipping.
    """
    return torch.arange(
        num_candidates, 0, -1, dtype=torch.float32,
        device=device) / num_candidates


def lp_clip_errors(x: Tensor,
                   min_val: Tensor,
                   max_val: Tensor,
                   alphas: Tensor,
                   qscheme: QSchema,
                   p: float = 2.0,
                   weights: Optional[Tensor] = None) -> Tensor:
    """Lp quantization error of ``x`` for each clipping ratio and channel.

    For candidate ``k`` and channel ``c`` the range is
    ``[alpha_k * min_c, alpha_k * max_c]``, its qparams come from
    :func:`calculate_qparams`, and

    ``err[k, c] = sum_n w[c, n] * |x[c, n] - fq_k(x[c, n])| ** p``

    (``w = 1`` without ``weights``). Sums, not means, so partial errors of
    several ranks add up to the error of their union.

    Args:
        x (Tensor): Values, ``[C, N]``.
        min_val (Tensor): Per-channel minimum, ``[C]``.
        max_val (Tensor): Per-channel maximum, ``[C]``.
        alphas (Tensor): Clipping ratios, ``[K]``.
        qscheme (QSchema): The target scheme.
        p (float): Norm exponent. Defaults to 2.0.
        weights (Tensor, optional): Per-value weights (histogram counts),
            ``[C, N]``. Defaults to None.

    Returns:
        Tensor: ``err``, float64 ``[K, C]``.
    """
    num_k, (num_c, num_n) = alphas.numel(), x.shape
    errors = torch.empty(num_k, num_c, dtype=torch.float64, device=x.device)
    block = max(1, _BLOCK_ELEMENTS // max(1, num_c * num_n))
    # A loop over blocks of candidates, each vectorised over all values.
    for start in range(0, num_k, block):
        ratio = alphas[start:start + block, None]
        scale, zero_point = calculate_qparams(ratio * min_val,
                                              ratio * max_val, qscheme)
        xq = fake_quantize(x[None], scale[..., None], zero_point[..., None],
                           qscheme)
        diff = (xq - x[None]).abs()
        err = diff * diff if p == 2.0 else diff.pow(p)
        if weights is not None:
            err = err * weights[None]
        errors[start:start + block] = err.sum(-1, dtype=torch.float64)
    return errors


def interp(x: Tensor, xp: Tensor, fp: Tensor) -> Tensor:
    """Piecewise-linear interpolation (as ``numpy.interp``).

    ``xp`` must be non-decreasing; outside ``[xp[0], xp[-1]]`` the end values
    of ``fp`` are returned, and a flat step of ``xp`` returns its left value.
    """
    idx = torch.searchsorted(xp, x, right=True).clamp(1, xp.numel() - 1)
    x0, x1 = xp[idx - 1], xp[idx]
    f0, f1 = fp[idx - 1], fp[idx]
    width = x1 - x0
    ratio = torch.where(width > 0, (x - x0) / torch.where(
        width > 0, width, torch.ones_like(width)), torch.zeros_like(width))
    return f0 + ratio.clamp(0, 1) * (f1 - f0)
