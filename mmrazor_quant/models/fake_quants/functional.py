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

Speed: float32 inputs run through autograd functions of our own made of
vectorised in-place torch ops (one ``x * (1/s)`` pass, ``round_``,
``add_``, ``clamp``, ``sub_``, ``mul_``), which give the same values as the
ATen kernels bit for bit but run many times faster on CPU: the ATen
fake-quant kernels (and any torch op that *reads* a ``bool`` tensor, such
as ``grad * mask``) are scalar loops there. The straight-through mask is
saved as ``bool`` and read back through a ``uint8`` view for the same
reason. Other dtypes, and export / compile / JIT traces, take the ATen
kernels.
"""
from typing import Optional, Tuple, Union

import torch
from torch import Tensor

from mmrazor_quant.structures.quantization import RoundingPolicy

__all__ = [
    'fake_quantize', 'fake_quantize_learnable', 'round_half_away_from_zero'
]

Number = Union[float, int, Tensor]


def round_half_away_from_zero(v: Tensor) -> Tensor:
    """Round to the nearest integer, ties away from zero.

    Computes ``trunc(v) + sign(f) * (|f| >= 1/2)`` with ``f = v - trunc(v)``,
    which is exact in floating point. (The textbook
    ``sign(v) * floor(|v| + 0.5)`` rounds ``0.49999997`` up to 1 because the
    float sum already rounds to 1.)

    Args:
        v (Tensor): Floating-point values.

    Returns:
        Tensor: Rounded values, same dtype as ``v``.
    """
    whole = torch.trunc(v)
    frac = v - whole
    # A uint8 view of the bool tie mask: reading bool tensors is slow.
    half = (frac.abs() >= 0.5).view(torch.uint8)
    return whole.add_(torch.sign(frac).mul_(half))


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


def _broadcast_shape(x: Tensor, axis: Optional[int]) -> Tuple[int, ...]:
    """Shape that broadcasts 1-d qparams along ``axis`` (0-d per-tensor)."""
    if axis is None:
        return ()
    shape = [1] * x.dim()
    shape[axis] = x.shape[axis]
    return tuple(shape)


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


def _is_tracing() -> bool:
    """Whether an export / JIT trace records this call: it then takes the
    single ATen op, which exporters recognise. ``torch.compile`` takes the
    plain-op formulas instead (the eager numerics, no graph break)."""
    return (torch.compiler.is_exporting() or torch.jit.is_tracing()
            or torch.onnx.is_in_onnx_export())


def _round(v: Tensor, half_away: bool) -> Tensor:
    """``v`` rounded (a new tensor): half-even or half away from zero."""
    return round_half_away_from_zero(v) if half_away else torch.round(v)


class _FakeQuantizeSTE(torch.autograd.Function):
    """Fake quantization of float32 ``x`` with the straight-through
    gradient, in vectorised torch ops.

    ``scale``, ``inv_scale = 1 / scale`` and the float ``zero_point`` are
    float32 and already broadcast-shaped. Computes, as ATen,
    ``q = round(x * inv_scale) + z`` and ``(clamp(q) - z) * scale``; the
    mask ``q == clamp(q)`` is ATen's ``quant_min <= q <= quant_max`` (false
    for NaN).
    """

    @staticmethod
    def forward(ctx, x: Tensor, scale: Tensor, inv_scale: Tensor,
                zero_point: Tensor, quant_min: int, quant_max: int,
                half_away: bool) -> Tensor:
        v = torch.mul(x, inv_scale)
        q = _round(v, half_away) if half_away else v.round_()
        q = q.add_(zero_point)
        out = q.clamp(quant_min, quant_max)
        if ctx.needs_input_grad[0]:
            ctx.save_for_backward(torch.eq(q, out))
        return out.sub_(zero_point).mul_(scale)

    @staticmethod
    def backward(ctx, grad: Tensor):
        inside, = ctx.saved_tensors
        return (grad * inside.view(torch.uint8), None, None, None, None,
                None, None)


def _fake_quantize_fast(x: Tensor, scale: Tensor, zero_point: Tensor,
                        quant_min: int, quant_max: int, half_away: bool,
                        inv_scale: Optional[Tensor] = None) -> Tensor:
    """:class:`_FakeQuantizeSTE` on broadcast-shaped float32 ``scale`` and
    ``zero_point`` (any dtype; converted to float32)."""
    if inv_scale is None:
        inv_scale = torch.reciprocal(scale)
    return _FakeQuantizeSTE.apply(x, scale, inv_scale,
                                  zero_point.to(torch.float32), quant_min,
                                  quant_max, half_away)


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
    _check_range(quant_min, quant_max)
    rounding = RoundingPolicy(rounding)
    scale, zero_point, axis = _fixed_qparams(x, scale, zero_point, quant_min,
                                             quant_max, ch_axis)
    half_away = rounding is RoundingPolicy.HALF_AWAY_FROM_ZERO
    if half_away or (x.dtype == torch.float32 and not _is_tracing()):
        shape = _broadcast_shape(x, axis)
        return _fake_quantize_fast(x, scale.reshape(shape),
                                   zero_point.reshape(shape), quant_min,
                                   quant_max, half_away)
    # Other dtypes (half, bfloat16, float64): ATen's own arithmetic.
    if axis is None:
        return torch.fake_quantize_per_tensor_affine(x, scale, zero_point,
                                                     quant_min, quant_max)
    return torch.fake_quantize_per_channel_affine(x, scale, zero_point, axis,
                                                  quant_min, quant_max)


class _LearnableFakeQuantize(torch.autograd.Function):
    """LSQ / LSQ+ fake quantization in vectorised torch ops.

    Inputs are already broadcast-shaped; ``zero_point`` is a float tensor.
    Gradients (``v = x * (1/s)``, ``z`` rounded and clamped,
    ``q = round(v) + z``, ``t = clamp(q) - z``)::

        dy/dx = 1 inside, 0 clipped
        dy/ds = round(v) - v inside, quant_min - z / quant_max - z clipped
              = t - v * inside
        dy/dz = 0 inside, -s clipped

    ``dy/ds`` and ``dy/dz`` are multiplied by ``grad_factor``. Inside the
    grid ``t = round(v)`` exactly, so ``t - v * inside`` is the formula
    above without any ``where`` over ``bool`` masks (slow on CPU).
    """

    @staticmethod
    def forward(ctx, x: Tensor, scale: Tensor, zero_point: Tensor,
                quant_min: int, quant_max: int, grad_factor: float,
                half_away: bool) -> Tensor:
        z = zero_point.round().clamp_(quant_min, quant_max)
        v = torch.mul(x, torch.reciprocal(scale))
        q = _round(v, half_away).add_(z)
        t = q.clamp(quant_min, quant_max)
        inside = torch.eq(q, t)
        del q
        t = t.sub_(z)
        ctx.save_for_backward(scale, inside, v, t)
        ctx.grad_factor = grad_factor
        return t * scale

    @staticmethod
    def backward(ctx, grad: Tensor):
        scale, inside, v, t = ctx.saved_tensors
        inside = inside.view(torch.uint8)
        grad_x = grad * inside
        grad_scale = grad_zp = None
        if ctx.needs_input_grad[1]:
            d_scale = t.sub_(v.mul_(inside))
            grad_scale = _sum_to(d_scale.mul_(grad), scale) * ctx.grad_factor
        if ctx.needs_input_grad[2]:
            clipped = grad - grad_x  # exact: grad where clipped, else 0
            grad_zp = _sum_to(clipped, scale) * (-ctx.grad_factor) * scale
        return grad_x, grad_scale, grad_zp, None, None, None, None


def _sum_to(t: Tensor, like: Tensor) -> Tensor:
    """Sum ``t`` over the axes along which ``like`` was broadcast."""
    dims = [i for i, n in enumerate(like.shape) if n == 1 and t.shape[i] != 1]
    if like.dim() == 0:
        return t.sum()
    return t.sum(dim=dims, keepdim=True) if dims else t


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
    _check_range(quant_min, quant_max)
    rounding = RoundingPolicy(rounding)
    zero_point = zero_point.to(dtype=scale.dtype)
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
    half_away = rounding is RoundingPolicy.HALF_AWAY_FROM_ZERO
    if half_away or (x.dtype == torch.float32 and scale.dtype == torch.float32
                     and not _is_tracing()):
        shape = _broadcast_shape(x, axis)
        return _LearnableFakeQuantize.apply(x, scale.reshape(shape),
                                            zero_point.reshape(shape),
                                            quant_min, quant_max,
                                            grad_factor, half_away)
    if axis is None:
        # One channel of the per-channel kernel: ATen's per-tensor
            # learnable backward rounds the zero-point differently from its
            # forward (wrong gradients for negative zero-points) and syncs
            # with .item(). reshape keeps the gradient reaching a 0-d scale.
        return torch._fake_quantize_learnable_per_channel_affine(
            x.reshape(1, -1), scale.reshape(1), zero_point.reshape(1), 0,
            quant_min, quant_max, grad_factor).reshape(x.shape)
    return torch._fake_quantize_learnable_per_channel_affine(
        x, scale.reshape(-1), zero_point.reshape(-1), axis, quant_min,
        quant_max, grad_factor)
