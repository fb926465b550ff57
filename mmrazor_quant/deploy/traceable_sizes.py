"""Keep size arithmetic symbolic through the ONNX exporter's tracing.

The capture (``CustomTracer`` with ``input_shape``) records
``int(x.shape[0] / n)``, ``math.ceil(h / s)`` and the like as graph nodes,
so the simulation runs at any batch size and resolution. The TorchScript
ONNX exporter traces the graph again: there ``x.shape[0]`` is a 0-d tensor
and arithmetic on it is recorded, but ``int()``/``float()``/``math.ceil()``
of a tensor return a Python number that is frozen into the ONNX graph as a
constant. Swin's ``window_reverse`` (``B = int(windows.shape[0] / (H * W /
ws / ws))``) then reshapes with the export batch size, and at any other
batch size the ``-1`` of the next ``view`` silently absorbs the difference:
the exported model runs and is wrong. Here those calls become tensor ops
while tracing and stay the builtins otherwise.
"""
import builtins
import math
from typing import Any, Callable, Dict

import torch
from torch import Tensor, fx

__all__ = ['make_size_arithmetic_traceable']


def traceable_int(x: Any) -> Any:
    """``int(x)``; a 0-d tensor is truncated to int64 as a tensor op."""
    return x.to(torch.int64) if isinstance(x, Tensor) else builtins.int(x)


def traceable_float(x: Any) -> Any:
    """``float(x)``; a 0-d tensor becomes float32 as a tensor op."""
    return x.to(torch.float32) if isinstance(x, Tensor) else \
        builtins.float(x)


def traceable_floor(x: Any) -> Any:
    """``math.floor(x)``; on a tensor, ``floor`` then int64."""
    return torch.floor(x).to(torch.int64) if isinstance(x, Tensor) else \
        math.floor(x)


def traceable_ceil(x: Any) -> Any:
    """``math.ceil(x)``; on a tensor, ``ceil`` then int64."""
    return torch.ceil(x).to(torch.int64) if isinstance(x, Tensor) else \
        math.ceil(x)


def traceable_trunc(x: Any) -> Any:
    """``math.trunc(x)``; on a tensor, ``trunc`` then int64."""
    return torch.trunc(x).to(torch.int64) if isinstance(x, Tensor) else \
        math.trunc(x)


def traceable_round(x: Any, ndigits: Any = None) -> Any:
    """``round(x)``; on a tensor (no ``ndigits``), half-to-even like
    Python's ``round``, then int64."""
    if isinstance(x, Tensor) and ndigits is None:
        return torch.round(x).to(torch.int64)
    return builtins.round(x, ndigits)


_TRACEABLE: Dict[Callable, Callable] = {
    builtins.int: traceable_int,
    builtins.float: traceable_float,
    math.floor: traceable_floor,
    math.ceil: traceable_ceil,
    math.trunc: traceable_trunc,
    builtins.round: traceable_round,
}


def make_size_arithmetic_traceable(model: fx.GraphModule) -> int:
    """Swap the number conversions of ``model``'s graph for versions the
    exporter traces (in place; numerics unchanged outside tracing).

    Args:
        model (fx.GraphModule): A deploy model.

    Returns:
        int: How many calls were swapped.
    """
    swapped = 0
    for node in model.graph.nodes:
        if node.op == 'call_function' and node.target in _TRACEABLE:
            node.target = _TRACEABLE[node.target]
            swapped += 1
    if swapped:
        model.recompile()
    return swapped
