"""TFLite's int8 BATCH_MATMUL in the simulation: the exact int32 product of
the int8 operands, requantized with TFLite's fixed-point arithmetic.

TFLite requantizes the int32 accumulator ``acc = sum (a_q - z_a)(b_q -
z_b)`` of an int8 BATCH_MATMUL with a 31-bit multiplier and a shift, not
with a float multiplication:

* the real multiplier is ``M = float32(s_a * s_b) / s_out`` (the product of
  the two input scales rounded to float32, the division in double);
* ``M = m * 2^e`` with ``m`` in ``[0.5, 1)`` (``frexp``), ``m`` stored as
  the Q31 integer ``round(m * 2^31)`` (ties away from zero);
* ``acc * M`` is computed as a rounding doubling high multiply (the high 32
  bits of ``2 * acc * m_q``, rounded to nearest, ties up) and a rounding
  right shift by ``-e`` (ties away from zero): two roundings.

An output within about ``2^e`` of a half step therefore rounds the other
way than ``round(acc * M)``; a float simulation rounds once.

LiteRT's default XNNPACK delegate takes a BATCH_MATMUL whose second
operand has zero-point 0 and requantizes it in float32 (one rounding, as
the float simulation); one with another zero-point runs in TFLite's
builtin kernel, with the arithmetic above, as every BATCH_MATMUL does
without the delegate. Measured against LiteRT 2.3's interpreter, this
module's result is the interpreter's, bit for bit, in both cases.

:func:`simulate_int8_matmuls` puts :func:`tflite_int8_matmul` between each
matmul of two fake-quantized tensors and its output fake quant.
"""
import math
import operator
from typing import Dict, List, Optional, Tuple

import torch
from torch import Tensor, fx, nn

from .op_kinds import OpKind, classify_node
from .passes.insert_fake_quants import is_fake_quant_node

__all__ = [
    'quantize_multiplier', 'multiply_by_quantized_multiplier',
    'requantize_multiplier', 'tflite_int8_matmul', 'simulate_int8_matmuls',
    'remove_int8_matmul_simulation'
]

_Q31 = 1 << 31


def quantize_multiplier(real: float) -> Tuple[int, int]:
    """TFLite's encoding of a positive real multiplier: ``(m_q, e)`` with
    ``real ~= m_q * 2^(e - 31)``, ``m_q`` in ``[2^30, 2^31)``.

    Args:
        real (float): The multiplier, e.g. ``s_a * s_b / s_out``.

    Returns:
        tuple[int, int]: The Q31 mantissa and the exponent; ``(0, 0)`` for
        zero or a multiplier below ``2^-32``.
    """
    if real <= 0:
        return 0, 0
    mantissa, exponent = math.frexp(real)
    # mantissa * 2^31 is exact in double: ties round away from zero
    fixed = int(math.floor(mantissa * _Q31 + 0.5))
    if fixed == _Q31:
        fixed //= 2
        exponent += 1
    if exponent < -31:
        return 0, 0
    return fixed, exponent


def _rounding_doubling_high_mul(x: Tensor, multiplier: int) -> Tensor:
    """The high 32 bits of ``2 * x * multiplier``, rounded to nearest with
    ties up (``x`` int64 holding int32 values)."""
    product = x * multiplier
    nudge = torch.where(product >= 0, torch.full_like(product, 1 << 30),
                        torch.full_like(product, 1 - (1 << 30)))
    return torch.div(product + nudge, _Q31, rounding_mode='trunc')


def _rounding_divide_by_pot(x: Tensor, exponent: int) -> Tensor:
    """``x / 2^exponent`` rounded to nearest, ties away from zero."""
    if exponent == 0:
        return x
    mask = (1 << exponent) - 1
    remainder = torch.bitwise_and(x, mask)
    threshold = (mask >> 1) + (x < 0).to(x.dtype)
    return torch.div(x, 1 << exponent, rounding_mode='floor') + (
        remainder > threshold).to(x.dtype)


def multiply_by_quantized_multiplier(x: Tensor, multiplier: int,
                                     exponent: int) -> Tensor:
    """``x * m_q * 2^(exponent - 31)`` as TFLite's int8 kernels compute it
    (a left shift for a positive exponent, the rounding doubling high
    multiply, a rounding right shift for a negative one).

    Args:
        x (Tensor): int64 tensor of int32 accumulators.
        multiplier (int): Q31 mantissa of :func:`quantize_multiplier`.
        exponent (int): Its exponent.
    """
    x = x * (1 << max(exponent, 0))
    return _rounding_divide_by_pot(
        _rounding_doubling_high_mul(x, multiplier), max(-exponent, 0))


def requantize_multiplier(scale_a: Tensor, scale_b: Tensor,
                          scale_out: Tensor) -> Tuple[int, int]:
    """:func:`quantize_multiplier` of BATCH_MATMUL's real multiplier
    ``float32(s_a * s_b) / s_out`` (float32 scales, as in the file)."""
    product = (scale_a.float() * scale_b.float()).item()
    return quantize_multiplier(product / scale_out.float().item())


class _ExactForward(torch.autograd.Function):
    """Forward: ``exact``; backward: the gradient goes to ``simulated``."""

    @staticmethod
    def forward(ctx, simulated: Tensor, exact: Tensor) -> Tensor:
        return exact

    @staticmethod
    def backward(ctx, grad: Tensor):
        return grad, None


def _integers(x: Tensor, scale: Tensor) -> Tensor:
    """``q - z`` of a fake-quantized tensor ``x = (q - z) * s`` (float64)."""
    return torch.round(x.detach().double() / scale.double())


def tflite_int8_matmul(product: Tensor, a: Tensor, b: Tensor,
                       fq_a: nn.Module, fq_b: nn.Module, fq_out: nn.Module,
                       xnnpack: bool = True) -> Tensor:
    """``a @ b`` as TFLite's int8 BATCH_MATMUL computes it, on ``fq_out``'s
    grid; ``product`` (the float ``a @ b``) where that is not defined.

    ``a`` and ``b`` are the outputs of the fake quants ``fq_a`` and
    ``fq_b`` (through shape ops), ``fq_out`` is the fake quant that follows.
    The result is ``(clamp(z_out + MBQM(acc)) - z_out) * s_out`` with
    ``acc`` the exact integer product of the operands and ``MBQM``
    :func:`multiply_by_quantized_multiplier`, so ``fq_out`` leaves it as it
    is. The gradient is the float matmul's (straight through).

    ``product`` is returned unchanged where the runtime rounds once: with
    ``xnnpack`` (LiteRT's default delegate) when ``fq_b``'s zero-point is
    0. Also while exporting to ONNX (the QDQ model has a plain MatMul),
    while a fake quant is disabled, while ``fq_out`` observes (its scale is
    not final), and while ``fq_out``'s scale is a parameter being trained
    (its gradient needs the unrounded values).

    Args:
        xnnpack (bool): Follow the interpreter with its default XNNPACK
            delegate; False: TFLite's builtin BATCH_MATMUL kernel (the
            interpreter without the delegate). Defaults to True.
    """
    if torch.onnx.is_in_onnx_export() or fq_out.observer_on or not all(
            fq.fake_quant_on for fq in (fq_a, fq_b, fq_out)):
        return product
    if torch.is_grad_enabled() and isinstance(
            getattr(fq_out, 'scale', None),
            nn.Parameter) and fq_out.scale.requires_grad:
        return product
    scale_b, zero_b = fq_b.get_qparams()
    if xnnpack and int(zero_b) == 0:
        return product
    scale_a, _ = fq_a.get_qparams()
    scale_out, zero_out = fq_out.get_qparams()
    multiplier, exponent = requantize_multiplier(scale_a, scale_b, scale_out)
    with torch.no_grad():
        # exact in float64 while K * 255^2 < 2^53
        acc = torch.matmul(_integers(a, scale_a), _integers(b, scale_b))
        q = multiply_by_quantized_multiplier(
            acc.to(torch.int64), multiplier, exponent) + int(zero_out)
        q = q.clamp(fq_out.quant_min, fq_out.quant_max)
        exact = (q.to(product.dtype) - int(zero_out)) * \
            scale_out.to(product.device, product.dtype)
    return _ExactForward.apply(product, exact)


_MATMULS = frozenset({operator.matmul, torch.matmul, torch.bmm})


def _source_fake_quant(node, modules: Dict[str, nn.Module]
                       ) -> Optional[fx.Node]:
    """The fake-quant node whose output reaches ``node`` through ops that
    keep the grid (reshapes, transposes, indexing, identity dropout);
    None if there is none."""
    while isinstance(node, fx.Node) and not is_fake_quant_node(node):
        if classify_node(node, modules) != OpKind.SHAPE or not node.args:
            return None
        module = modules.get(str(node.target)) \
            if node.op == 'call_module' else None
        if isinstance(module, nn.Dropout) and module.p > 0:
            return None  # a dropout that scales leaves the grid
        node = node.args[0]
    return node if isinstance(node, fx.Node) else None


def _per_tensor(node: fx.Node, modules: Dict[str, nn.Module]) -> bool:
    return not modules[str(node.target)].is_per_channel


def simulate_int8_matmuls(gm: fx.GraphModule) -> List[str]:
    """Insert :func:`tflite_int8_matmul` after each matmul of two
    fake-quantized tensors whose only user is a fake quant.

    Args:
        gm (fx.GraphModule): A prepared graph; modified in place.

    Returns:
        list[str]: The names of the output fake quants of those matmuls.
    """
    modules = dict(gm.named_modules())
    done = []
    for node in list(gm.graph.nodes):
        if node.op != 'call_function' or node.target not in _MATMULS or \
                len(node.args) != 2 or len(node.users) != 1:
            continue
        fq_out = next(iter(node.users))
        sources = [_source_fake_quant(a, modules) for a in node.args]
        fake_quants = sources + [fq_out]
        if not is_fake_quant_node(fq_out) or None in sources or not all(
                _per_tensor(fq, modules) for fq in fake_quants):
            continue
        with gm.graph.inserting_before(fq_out):
            attrs = [gm.graph.get_attr(str(fq.target)) for fq in fake_quants]
            exact = gm.graph.call_function(
                tflite_int8_matmul, (node, *node.args, *attrs))
        fq_out.replace_input_with(node, exact)
        done.append(str(fq_out.target))
    if done:
        gm.graph.lint()
        gm.recompile()
    return done


def remove_int8_matmul_simulation(gm: fx.GraphModule) -> int:
    """Undo :func:`simulate_int8_matmuls`: the fake quants read the float
    matmuls again (for a model whose matmuls run in float).

    Returns:
        int: How many matmuls were changed back.
    """
    count = 0
    for node in list(gm.graph.nodes):
        if node.op == 'call_function' and node.target is tflite_int8_matmul:
            attrs = node.args[3:]
            node.replace_all_uses_with(node.args[0])
            gm.graph.erase_node(node)
            for attr in attrs:
                if not attr.users:
                    gm.graph.erase_node(attr)
            count += 1
    if count:
        gm.graph.lint()
        gm.recompile()
    return count
