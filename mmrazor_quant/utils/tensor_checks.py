"""Value checks on tensors that work eagerly and under ``torch.compile``."""
from typing import Callable, Optional

import torch
from torch import Tensor

__all__ = ['check_all']


def check_all(condition: Tensor,
              message: str,
              details: Optional[Callable[[], str]] = None,
              error: type = ValueError) -> None:
    """Raise ``error`` unless every element of ``condition`` is true.

    Eager, the result is read on the host (a sync on CUDA) and ``error``
    carries ``message`` plus ``details()``. Under ``torch.compile`` reading
    it would break the graph, so the check becomes ``torch._assert_async``
    inside the graph: a ``RuntimeError`` with ``message`` on CPU, a
    device-side assertion on CUDA.

    Args:
        condition (Tensor): Boolean tensor that must be all true.
        message (str): What went wrong and what to do (no tensor values, so
            it can live in a compiled graph).
        details (Callable[[], str], optional): Builds an eager-only suffix,
            e.g. with the offending values. Defaults to None.
        error (type): Exception raised eagerly. Defaults to ValueError.

    Raises:
        ValueError: (or ``error``) If ``condition`` has a false element.
    """
    if torch.compiler.is_compiling():
        torch._assert_async(condition.all(), message)
    elif not bool(condition.all()):
        raise error(message + (details() if details is not None else ''))
