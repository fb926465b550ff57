"""Device-aware fake-quant arithmetic: the one place that picks a kernel.

Every fake quant (fixed, FakeQuantize, LSQ, LSQ+, PACT, QDrop, AdaRound,
the TQT example) quantizes through the functions here; they take qparams
already validated and broadcast-shaped, and choose per device and dtype:

========================  =================================================
fixed grid                * CPU, float32: :class:`_FakeQuantizeSTE`
                            (vectorised in-place ops; ATen's CPU fake-quant
                            kernels are scalar loops there);
                          * CPU, float16/bfloat16: the same on ``x.float()``,
                            cast back;
                          * CUDA (any float dtype), float64, export
                            traces: ATen's
                            ``fake_quantize_per_{tensor,channel}_affine``:
                            one fused kernel forward, its ``_cachemask``
                            form saves a ``bool`` mask for the backward.
                          * half-away-from-zero rounding (ATen rounds half
                            to even): :class:`_FakeQuantizeSTE` everywhere.
learned scale (LSQ/LSQ+)  :class:`_LearnableFakeQuantize` everywhere: saves
                          the input (no copy) and a ``bool`` mask, and
                          recomputes ``x / s`` in the backward.
PACT                      :class:`_PACT`: saves a ``uint8`` code.
========================  =================================================

Numerics are the same on every path: ``x * (1/s)`` in float32 (as ATen),
rounding, clamp, ``(q - z) * s`` in float32, output cast to ``x.dtype``.
float16/bfloat16 inputs are quantized in float32 arithmetic (ATen's kernels
promote to float internally too), so the result is the float32 result
rounded once to the input dtype.

``torch.fused_moving_avg_obs_fake_quant`` is not used: its qparams differ
from ours (a double-precision scale, a zero-point chosen by the smaller of
two rounding errors, the symmetric range ``max(-min/128, max/127)``), so it
would change the model; see docs/qat.md.
"""
from typing import Optional

import torch
from torch import Tensor

__all__ = [
    'check_float_input', 'quantize_fixed', 'quantize_learnable',
    'quantize_pact', 'round_half_away_from_zero'
]

#: Input dtypes every fake quant runs (AMP gives float16 / bfloat16).
FLOAT_DTYPES = (torch.float32, torch.float16, torch.bfloat16, torch.float64)


def check_float_input(x: Tensor, owner: str) -> None:
    """Raise a clear error for a dtype no kernel here quantizes.

    Args:
        x (Tensor): The input of a fake quant.
        owner (str): The fake quant's name, for the message.

    Raises:
        TypeError: If ``x`` is not float32, float16, bfloat16 or float64.
    """
    if x.dtype not in FLOAT_DTYPES:
        names = [str(d).replace('torch.', '') for d in FLOAT_DTYPES]
        raise TypeError(f'{owner}: cannot fake-quantize a {x.dtype} input; '
                        f'supported dtypes are {names}')


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


def _round_(v: Tensor, half_away: bool) -> Tensor:
    """``v`` rounded, in place where the policy allows."""
    return round_half_away_from_zero(v) if half_away else v.round_()


def _round(v: Tensor, half_away: bool) -> Tensor:
    """``v`` rounded into a new tensor (``v`` unchanged)."""
    return round_half_away_from_zero(v) if half_away else torch.round(v)


def _masked(grad: Tensor, mask: Tensor, dtype=None) -> Tensor:
    """``grad * mask`` for a 0/1 ``uint8`` mask, in ``dtype`` (default
    ``grad.dtype``), as one new tensor: a mixed-dtype product would first
    convert the mask into a hidden temporary, and on CPU each fresh
    x-sized tensor costs about as much as the op (page faults)."""
    return mask.to(dtype or grad.dtype).mul_(grad)


def _is_tracing() -> bool:
    """Whether an export / JIT trace records this call: it then takes the
    single ATen op, which exporters recognise. ``torch.compile`` takes the
    same path as eager (the eager numerics, no graph break)."""
    return (torch.compiler.is_exporting() or torch.jit.is_tracing()
            or torch.onnx.is_in_onnx_export())


def _as_float32(x: Tensor) -> Tensor:
    return x if x.dtype == torch.float32 else x.float()


class _FakeQuantizeSTE(torch.autograd.Function):
    """Fixed-grid fake quantization in vectorised torch ops, straight-through
    gradient, for any float ``x`` (arithmetic in float32).

    ``scale``, ``inv_scale = 1 / scale`` and the float ``zero_point`` are
    float32 and broadcast-shaped. Computes, as ATen,
    ``q = round(x * inv_scale) + z`` and ``(clamp(q) - z) * scale``; the
    mask ``q == clamp(q)`` is ATen's ``quant_min <= q <= quant_max`` (false
    for NaN). Saves only that ``bool`` mask. Without a gradient it computes
    ``clamp(round(x * inv_scale), quant_min - z, quant_max - z) * scale``
    in place: the same values (integers in float32), four passes over
    ``x`` instead of six.
    """

    @staticmethod
    def forward(ctx, x: Tensor, scale: Tensor, inv_scale: Tensor,
                zero_point: Tensor, quant_min: int, quant_max: int,
                half_away: bool) -> Tensor:
        q = _round_(torch.mul(_as_float32(x), inv_scale), half_away)
        if not ctx.needs_input_grad[0]:
            # no mask to save: one x-sized tensor, not two, and the zero
            # point moved into the bounds (integers: the same values, two
            # passes fewer)
            lo, hi = quant_min - zero_point, quant_max - zero_point
            if zero_point.numel() == 1 and zero_point.device.type == 'cpu' \
                    and not torch.compiler.is_compiling():
                # number bounds: with tensor bounds the CPU clamp takes 3x
                # as long (23 vs 8 ms on 20M floats)
                lo, hi = float(lo), float(hi)
            return q.clamp_(lo, hi).mul_(scale).to(x.dtype)
        q = q.add_(zero_point)
        out = q.clamp(quant_min, quant_max)
        ctx.save_for_backward(torch.eq(q, out))
        return out.sub_(zero_point).mul_(scale).to(x.dtype)

    @staticmethod
    def backward(ctx, grad: Tensor):
        inside, = ctx.saved_tensors
        # A uint8 view: torch ops reading bool tensors are slow on CPU.
        grad_x = _masked(grad, inside.view(torch.uint8))
        return grad_x, None, None, None, None, None, None


def quantize_fixed(x: Tensor,
                   scale: Tensor,
                   zero_point: Tensor,
                   quant_min: int,
                   quant_max: int,
                   axis: Optional[int] = None,
                   half_away: bool = False,
                   inv_scale: Optional[Tensor] = None) -> Tensor:
    """``(clamp(round(x * (1/s)) + z, quant_min, quant_max) - z) * s`` with
    the straight-through gradient, on the fastest exact path for ``x``.

    Args:
        x (Tensor): A float input (see :data:`FLOAT_DTYPES`).
        scale (Tensor): float32 scale, 0-d, or 1-d along ``axis``.
        zero_point (Tensor): int32 zero-point, shaped like ``scale``.
        quant_min (int): Smallest integer of the grid.
        quant_max (int): Largest integer of the grid.
        axis (int, optional): Non-negative channel axis for 1-d qparams;
            ``None`` per-tensor. Defaults to None.
        half_away (bool): Round ties away from zero instead of to even.
            Defaults to False.
        inv_scale (Tensor, optional): ``1 / scale``, if already computed.

    Returns:
        Tensor: The fake-quantized ``x``, in ``x.dtype``.
    """
    fast_cpu = x.device.type == 'cpu' and x.dtype != torch.float64
    if half_away or (fast_cpu and not _is_tracing()):
        shape = _broadcast_shape(x, axis)
        scale = scale.reshape(shape)
        if inv_scale is None:
            inv_scale = torch.reciprocal(scale)
        return _FakeQuantizeSTE.apply(x, scale, inv_scale.reshape(shape),
                                      zero_point.reshape(shape).float(),
                                      quant_min, quant_max, half_away)
    if axis is None:
        return torch.fake_quantize_per_tensor_affine(x, scale, zero_point,
                                                     quant_min, quant_max)
    return torch.fake_quantize_per_channel_affine(x, scale, zero_point, axis,
                                                  quant_min, quant_max)


def _broadcast_shape(x: Tensor, axis: Optional[int]):
    """Shape that broadcasts 1-d qparams along ``axis`` (0-d per-tensor)."""
    if axis is None:
        return ()
    shape = [1] * x.dim()
    shape[axis] = x.shape[axis]
    return tuple(shape)


class _LearnableFakeQuantize(torch.autograd.Function):
    """LSQ / LSQ+ fake quantization for any float ``x`` (float32
    arithmetic), saving only ``x`` itself and a ``bool`` mask.

    ``scale`` and the float ``zero_point`` are float32 and broadcast-shaped.
    With ``v = x * (1/s)``, ``z = clamp(round(zero_point))``,
    ``q = round(v) + z`` and ``t = clamp(q) - z``::

        y     = t * s
        dy/dx = 1 inside, 0 clipped
        dy/ds = round(v) - v inside, quant_min - z / quant_max - z clipped
              = t - v * inside
        dy/dz = 0 inside, -s clipped

    ``dy/ds`` and ``dy/dz`` are multiplied by ``grad_factor``. The backward
    recomputes ``v`` and ``t`` from ``x`` with the same float32 ops as the
    forward (the same bits), instead of keeping them: two float32 tensors
    per fake quant less for the whole forward-backward window. Inside the
    grid ``t = round(v)`` exactly, so ``t - v * inside`` is the formula
    above without a ``where`` over ``bool`` masks (slow on CPU).
    """

    @staticmethod
    def forward(ctx, x: Tensor, scale: Tensor, zero_point: Tensor,
                quant_min: int, quant_max: int, grad_factor: float,
                half_away: bool) -> Tensor:
        z = zero_point.round().clamp_(quant_min, quant_max)
        inv_scale = torch.reciprocal(scale)
        q = _round_(torch.mul(_as_float32(x), inv_scale), half_away).add_(z)
        t = q.clamp(quant_min, quant_max)
        inside = torch.eq(q, t)
        del q
        ctx.save_for_backward(x, scale, z, inside)
        ctx.quant_range = (quant_min, quant_max)
        ctx.grad_factor = grad_factor
        ctx.half_away = half_away
        return t.sub_(z).mul_(scale).to(x.dtype)

    @staticmethod
    def backward(ctx, grad: Tensor):
        x, scale, z, inside = ctx.saved_tensors
        # Each x-sized temporary is a fresh allocation, which costs about
        # as much as the op on CPU (page faults), so there are three: the
        # mask, converted once from a uint8 view (mixed-dtype ops would
        # convert it again each time; bool reads are slow) and turned into
        # grad_x in place at the end; ``v`` and ``t``, whose memory the
        # zero-point term reuses.
        mask = inside.view(torch.uint8).to(grad.dtype)
        grad_scale = grad_zp = spare = None
        if ctx.needs_input_grad[1]:
            v = torch.mul(_as_float32(x), torch.reciprocal(scale))
            t = _round(v, ctx.half_away).add_(z)
            t = t.clamp_(*ctx.quant_range).sub_(z)
            d_scale = t.addcmul_(v, mask, value=-1)  # t - v * inside
            grad_scale = _sum_to(d_scale.mul_(grad), scale) * ctx.grad_factor
            spare = v
        if ctx.needs_input_grad[2]:
            grad32 = _as_float32(grad)
            # grad - grad * inside: exactly grad where clipped, else 0
            clipped = torch.mul(grad32, mask, out=spare)
            clipped = torch.sub(grad32, clipped, out=clipped)
            grad_zp = _sum_to(clipped, scale) * (-ctx.grad_factor) * scale
        grad_x = mask.mul_(grad)  # grad * inside
        return grad_x, grad_scale, grad_zp, None, None, None, None


def _sum_to(t: Tensor, like: Tensor) -> Tensor:
    """Sum ``t`` over the axes along which ``like`` was broadcast."""
    if like.dim() == 0:
        return t.sum()
    dims = [i for i, n in enumerate(like.shape) if n == 1 and t.shape[i] != 1]
    return t.sum(dim=dims, keepdim=True) if dims else t


def quantize_learnable(x: Tensor,
                       scale: Tensor,
                       zero_point: Tensor,
                       quant_min: int,
                       quant_max: int,
                       axis: Optional[int] = None,
                       grad_factor: float = 1.0,
                       half_away: bool = False) -> Tensor:
    """LSQ / LSQ+ fake quantization (see :class:`_LearnableFakeQuantize`).

    Args:
        x (Tensor): A float input (see :data:`FLOAT_DTYPES`).
        scale (Tensor): Positive float32 scale, 0-d or 1-d along ``axis``.
        zero_point (Tensor): Zero-point shaped like ``scale`` (float:
            learnable; rounded and clamped in forward).
        quant_min (int): Smallest integer of the grid.
        quant_max (int): Largest integer of the grid.
        axis (int, optional): Non-negative channel axis; ``None``
            per-tensor. Defaults to None.
        grad_factor (float): LSQ's gradient scale. Defaults to 1.0.
        half_away (bool): Round ties away from zero. Defaults to False.

    Returns:
        Tensor: The fake-quantized ``x``, in ``x.dtype``; ``scale`` and
        ``zero_point`` receive float32 gradients.
    """
    shape = _broadcast_shape(x, axis)
    if _is_tracing() and not half_away:
        # One ATen op that exporters and compilers know; per-channel even
        # per-tensor, as its per-tensor backward rounds the zero-point
        # differently from its forward.
        flat = x.reshape(1, -1) if axis is None else x
        out = torch._fake_quantize_learnable_per_channel_affine(
            _as_float32(flat), scale.reshape(-1).float(),
            zero_point.reshape(-1).float(), 0 if axis is None else axis,
            quant_min, quant_max, grad_factor)
        return out.reshape(x.shape).to(x.dtype)
    return _LearnableFakeQuantize.apply(x, scale.float().reshape(shape),
                                        zero_point.float().reshape(shape),
                                        quant_min, quant_max, grad_factor,
                                        half_away)


class _PACT(torch.autograd.Function):
    """``y = fq(clip(x, 0, alpha))`` on the grid of step
    ``s = alpha / (quant_max - quant_min)`` with PACT's straight-through
    gradients::

        dy/dx     = 1 if 0 <= x < alpha else 0
        dy/dalpha = 1 if x >= alpha else 0

    (the grid itself passes no gradient to ``alpha``, as in the paper).
    Saves one ``uint8`` code per element: 0 below, 1 inside, 2 above.
    """

    @staticmethod
    def forward(ctx, x: Tensor, alpha: Tensor, quant_min: int,
                quant_max: int, half_away: bool) -> Tensor:
        alpha_x = alpha.to(x.dtype)
        code = (x >= 0).view(torch.uint8) + (x >= alpha_x).view(torch.uint8)
        ctx.save_for_backward(code)
        ctx.alpha_shape = alpha.shape
        clipped = torch.minimum(x.clamp(min=0), alpha_x)
        scale = alpha.float() / (quant_max - quant_min)
        zero_point = torch.full_like(scale, quant_min, dtype=torch.int32)
        # Autograd is off in here: the inner fake quant saves nothing.
        return quantize_fixed(clipped, scale, zero_point, quant_min,
                              quant_max, None, half_away)

    @staticmethod
    def backward(ctx, grad: Tensor):
        code, = ctx.saved_tensors
        grad_x = _masked(grad, torch.eq(code, 1).view(torch.uint8))
        above = torch.bitwise_right_shift(code, 1)
        grad_alpha = _masked(grad, above, torch.float32).sum()
        return grad_x, grad_alpha.reshape(ctx.alpha_shape), None, None, None


def quantize_pact(x: Tensor,
                  alpha: Tensor,
                  quant_min: int,
                  quant_max: int,
                  half_away: bool = False) -> Tensor:
    """PACT: ``fq(clip(x, 0, alpha))`` on the grid of step
    ``alpha / (quant_max - quant_min)`` and zero-point ``quant_min``
    (see :class:`_PACT`).

    Args:
        x (Tensor): A float input.
        alpha (Tensor): Positive 0-d clipping level (learnable).
        quant_min (int): Smallest integer of the grid.
        quant_max (int): Largest integer of the grid.
        half_away (bool): Round ties away from zero. Defaults to False.

    Returns:
        Tensor: The fake-quantized ``x``, in ``x.dtype``.
    """
    return _PACT.apply(x, alpha, quant_min, quant_max, half_away)
