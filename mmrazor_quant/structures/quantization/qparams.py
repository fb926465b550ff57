"""Pure functions for the scale / zero-point math shared by all observers."""
from typing import Tuple

import torch
from torch import Tensor

from mmrazor_quant.utils.tensor_checks import check_all
from .qscheme import QSchema

__all__ = ['calculate_qparams', 'pot_scale']

_EPS = torch.finfo(torch.float32).eps


def pot_scale(scale: Tensor) -> Tensor:
    """Round ``scale`` up to the next power of two (never shrink the range)."""
    return torch.pow(2.0, torch.ceil(torch.log2(scale)))


def calculate_qparams(min_val: Tensor,
                      max_val: Tensor,
                      qscheme: QSchema,
                      eps: float = _EPS) -> Tuple[Tensor, Tensor]:
    """Scale and zero-point that map ``[min_val, max_val]`` onto the grid.

    With ``qmin, qmax = qscheme.quant_range``, ``lo = min(min_val, 0)`` and
    ``hi = max(max_val, 0)`` (0 must be representable exactly):

    * asymmetric: ``scale = (hi - lo) / (qmax - qmin)``,
      ``zero_point = clamp(qmin - round(lo / scale), qmin, qmax)``;
    * symmetric, signed: ``scale = max(-lo, hi) / ((qmax - qmin) / 2)``,
      ``zero_point = 0`` (``= amax / 127`` for ``[-127, 127]``, as TensorRT);
    * symmetric, unsigned, all data ``>= 0`` (e.g. after ReLU):
      ``scale = hi / (qmax - qmin)``, ``zero_point = qmin`` (OpenVINO's
      unsigned symmetric quantizer);
    * symmetric, unsigned, data with negatives: ``scale`` as signed,
      ``zero_point = (qmin + qmax + 1) // 2`` (128 for ``[0, 255]``, as
      torch's ``quint8`` symmetric observers).

    ``scale`` is clamped below by ``eps`` and, for ``is_pot_scale``, rounded
    up to a power of two (the zero-point is then recomputed).

    Args:
        min_val (Tensor): Observed minimum, 0-d (per-tensor) or 1-d
            (per-channel).
        max_val (Tensor): Observed maximum, same shape as ``min_val``.
        qscheme (QSchema): The target scheme.
        eps (float): Smallest scale. Defaults to float32 epsilon.

    Returns:
        tuple[Tensor, Tensor]: ``scale`` (float32) and ``zero_point``
        (int32), both shaped like ``min_val``.

    Raises:
        ValueError: If the statistics hold NaN/inf or ``min_val > max_val``
            (the observer has seen no data).
    """
    if min_val.shape != max_val.shape:
        raise ValueError(f'min_val {tuple(min_val.shape)} and max_val '
                         f'{tuple(max_val.shape)} must have the same shape')
    check_all(
        torch.isfinite(min_val) & torch.isfinite(max_val),
        'cannot compute qparams from non-finite statistics; has the '
        'observer seen any data?', lambda: f' (min={min_val}, max={max_val})')
    check_all(min_val <= max_val,
              'min_val > max_val: the observer has seen no data',
              lambda: f' ({min_val} > {max_val})')
    qmin, qmax = qscheme.quant_range
    lo = torch.clamp(min_val.float(), max=0.)
    hi = torch.clamp(max_val.float(), min=0.)

    if qscheme.is_symmetry:
        amax = torch.maximum(-lo, hi)
        if qscheme.is_signed:
            scale = amax / ((qmax - qmin) / 2)
            zero_point = torch.zeros_like(scale, dtype=torch.int32)
        else:
            non_negative = lo >= 0
            scale = torch.where(non_negative, amax / (qmax - qmin),
                                amax / ((qmax - qmin) / 2))
            zero_point = torch.where(
                non_negative, torch.full_like(scale, qmin),
                torch.full_like(scale, (qmin + qmax + 1) // 2)).int()
        scale = torch.clamp(scale, min=eps)
        if qscheme.is_pot_scale:
            scale = pot_scale(scale)
        return scale, zero_point

    scale = torch.clamp((hi - lo) / (qmax - qmin), min=eps)
    if qscheme.is_pot_scale:
        scale = pot_scale(scale)
    zero_point = qmin - torch.round(lo / scale)
    zero_point = torch.clamp(zero_point, qmin, qmax).int()
    return scale, zero_point
