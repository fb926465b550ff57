"""Fake-quantization primitives: pure functions over tensors.

Both functions compute, with ``inv_scale = 1 / scale`` (in float32, as
torch's ATen kernels do)::

    q = round(x * inv_scale) + zero_point
    y = (clamp(q, quant_min, quant_max) - zero_point) * scale

``round`` is banker's rounding for :attr:`RoundingPolicy.HALF_EVEN` (the
ATen kernels) and ``sign(v) * floor(|v| + 1/2)`` for
:attr:`RoundingPolicy.HALF_AWAY_FROM_ZERO` (autograd functions of our own).
The gradient with respect to ``x`` is the straight-through estimator: 1 where
``quant_min <= q <= quant_max``, 0 where ``q`` was clipped.

Any range inside ``[-2**16, 2**16 - 1]`` works, so 2- to 16-bit grids,
signed or unsigned, per-tensor or per-channel along any axis.

Which kernel runs (per device and dtype) is decided in :mod:`.kernels`;
these functions validate their arguments and call it. float16/bfloat16
inputs are quantized in float32 arithmetic and returned in their dtype.
"""
from typing import Optional, Tuple, Union

import torch
from torch import Tensor

from mmrazor_quant.structures.quantization import RoundingPolicy
from .kernels import (
    check_float_input,
    quantize_fixed,
    quantize_learnable,
    round_half_away_from_zero,
)

__all__ = [
    'fake_quantize', 'fake_quantize_learnable', 'round_half_away_from_zero'
]

Number = Union[float, int, Tensor]


def _check_range(quant_min: int, quant_max: int) -> None:
    if not quant_min <= quant_max:
        raise ValueError(f'quant_min ({quant_min}) must be <= quant_max '
                         f'({quant_max})')


def _normalize_axis(x: Tensor, ch_axis: int, numel: int) -> int:
    """``ch_axis`` as a non-negative axis of ``x`` holding ``numel`` channels.
    """
    if not -x.dim() <= ch_axis < x.dim():
        raise ValueError(f'ch_axis={ch_axis} is out of range for a tensor '
                         f'of shape {tuple(x.shape)}')
    axis = ch_axis % x.dim()
    if x.shape[axis] != numel:
        raise ValueError(f'per-channel qparams have {numel} channels but the '
                         f'tensor of shape {tuple(x.shape)} has '
                         f'{x.shape[axis]} along axis {axis}')
    return axis


def _as_tensor(value: Number, dtype: torch.dtype, device) -> Tensor:
    if isinstance(value, Tensor):
        return value.to(device=device, dtype=dtype)
    return torch.tensor(value, dtype=dtype, device=device)


def _fixed_qparams(x: Tensor, scale: Number, zero_point: Number,
                   quant_min: int, quant_max: int,
                   ch_axis: Optional[int]) -> Tuple[Tensor, Tensor, int]:
    """Detached float32 scale, int32 zero-point and the normalised axis."""
    scale = _as_tensor(scale, torch.float32, x.device).detach()
    zero_point = zero_point.detach() if isinstance(zero_point,
                                                   Tensor) else zero_point
    if not isinstance(zero_point, Tensor):
        zero_point = torch.tensor(zero_point, device=x.device)
    if zero_point.is_floating_point():
        # A learned float zero-point becomes the integer the backend stores.
        zero_point = zero_point.round().clamp(quant_min, quant_max)
    zero_point = zero_point.to(device=x.device, dtype=torch.int32)
    if ch_axis is None:
        if scale.numel() != 1 or zero_point.numel() != 1:
            raise ValueError('per-tensor fake quantization needs one scale '
                             f'and one zero-point, got {scale.numel()} and '
                             f'{zero_point.numel()}')
        return scale.reshape(()), zero_point.reshape(()), None
    scale, zero_point = scale.reshape(-1), zero_point.reshape(-1)
    if zero_point.numel() != scale.numel():
        raise ValueError(f'{scale.numel()} scales but {zero_point.numel()} '
                         'zero-points')
    return scale, zero_point, _normalize_axis(x, ch_axis, scale.numel())


def fake_quantize(
        x: Tensor,
        scale: Number,
        zero_point: Number,
        quant_min: int,
        quant_max: int,
        ch_axis: Optional[int] = None,
        rounding: Union[str, RoundingPolicy] = RoundingPolicy.HALF_EVEN
) -> Tensor:
    """Quantize and dequantize ``x`` on a fixed grid.

    ``y = (clamp(round(x * (1/s)) + z, quant_min, quant_max) - z) * s``;
    ``dy/dx = 1`` where the clamp is inactive, else 0. ``scale`` and
    ``zero_point`` receive no gradient (see :func:`fake_quantize_learnable`).

    Args:
        x (Tensor): Input.
        scale (float | Tensor): Scale; one value per-tensor, a 1-d tensor of
            ``x.shape[ch_axis]`` values per-channel.
        zero_point (int | Tensor): Zero-point(s), within
            ``[quant_min, quant_max]``. Float values are rounded and clamped.
        quant_min (int): Smallest integer of the grid.
        quant_max (int): Largest integer of the grid.
        ch_axis (int, optional): Channel axis for per-channel qparams
            (negative counts from the end); ``None`` for per-tensor.
            Defaults to None.
        rounding (str | RoundingPolicy): How ties are rounded. Defaults to
            ``RoundingPolicy.HALF_EVEN``.

    Returns:
        Tensor: The fake-quantized tensor, same shape as ``x``.

    Raises:
        ValueError: If ``quant_min > quant_max``, ``ch_axis`` is out of
            range, or the qparams do not match the granularity.
    """
    check_float_input(x, 'fake_quantize')
    _check_range(quant_min, quant_max)
    rounding = RoundingPolicy(rounding)
    scale, zero_point, axis = _fixed_qparams(x, scale, zero_point, quant_min,
                                             quant_max, ch_axis)
    return quantize_fixed(
        x, scale, zero_point, quant_min, quant_max, axis,
        rounding is RoundingPolicy.HALF_AWAY_FROM_ZERO)


def fake_quantize_learnable(
        x: Tensor,
        scale: Tensor,
        zero_point: Tensor,
        quant_min: int,
        quant_max: int,
        ch_axis: Optional[int] = None,
        grad_factor: float = 1.0,
        rounding: Union[str, RoundingPolicy] = RoundingPolicy.HALF_EVEN
) -> Tensor:
    """Fake quantization with LSQ / LSQ+ gradients for scale and zero-point.

    The forward is :func:`fake_quantize` with ``z = clamp(round(zero_point),
    quant_min, quant_max)``. With ``v = x / s`` and ``q = round(v) + z``
    (Esser et al., 2020, "Learned Step Size Quantization"; Bhalgat et al.,
    2020, "LSQ+")::

        dy/dx = 1 if quant_min <= q <= quant_max else 0
        dy/ds = g * (round(v) - v)      inside
                g * (quant_min - z)     if q < quant_min
                g * (quant_max - z)     if q > quant_max
        dy/dz = g * (0 inside, -s clipped)

    where ``g = grad_factor``; per-channel, ``dy/ds`` and ``dy/dz`` are
    summed per channel.

    Args:
        x (Tensor): Input.
        scale (Tensor): Positive scale(s): one value per-tensor, 1-d of
            ``x.shape[ch_axis]`` values per-channel.
        zero_point (Tensor): Zero-point(s), float (learnable) or integer,
            same shape as ``scale``.
        quant_min (int): Smallest integer of the grid.
        quant_max (int): Largest integer of the grid.
        ch_axis (int, optional): Channel axis; ``None`` for per-tensor.
            Defaults to None.
        grad_factor (float): LSQ's gradient scale ``g``, e.g.
            ``1 / sqrt(numel * quant_max)``. Defaults to 1.0.
        rounding (str | RoundingPolicy): How ties are rounded. Defaults to
            ``RoundingPolicy.HALF_EVEN``.

    Returns:
        Tensor: The fake-quantized tensor, same shape as ``x``.

    Raises:
        ValueError: If ``quant_min > quant_max``, ``ch_axis`` is out of
            range, or the qparams do not match the granularity.
    """
    check_float_input(x, 'fake_quantize_learnable')
    _check_range(quant_min, quant_max)
    rounding = RoundingPolicy(rounding)
    if ch_axis is None:
        if scale.numel() != 1 or zero_point.numel() != 1:
            raise ValueError('per-tensor fake quantization needs one scale '
                             f'and one zero-point, got {scale.numel()} and '
                             f'{zero_point.numel()}')
        axis = None
    else:
        axis = _normalize_axis(x, ch_axis, scale.numel())
        if zero_point.numel() != scale.numel():
            raise ValueError(f'{scale.numel()} scales but '
                             f'{zero_point.numel()} zero-points')
    return quantize_learnable(
        x, scale, zero_point, quant_min, quant_max, axis, grad_factor,
        rounding is RoundingPolicy.HALF_AWAY_FROM_ZERO)
