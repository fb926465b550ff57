"""Run-time checks of the shape decisions a trace baked into its graph.

When Python control flow or a Python number in a model depends on a shape
(``assert x.dim() == 4``, ``if pad_h > 0``, ``range(len(x.shape))``), the
tracer takes the answer of the example batch and records a guard: a graph
node that checks, each time the graph runs, that the same answer holds.
Shape *arithmetic* stays symbolic, so a guard only fails when the model
itself would have taken another branch, e.g. a window padding that becomes
non-zero at another resolution.
"""
import inspect
import operator
import os
from typing import Any, Callable, Dict, Optional

from torch.fx.node import has_side_effect

__all__ = ['ShapeGuardError', 'check_shape_guard', 'decision_site']

# Frames in these directories are tracer machinery, never the decision.
_MACHINERY_DIRS = (
    os.path.dirname(os.path.abspath(__file__)),
    os.path.dirname(os.path.abspath(inspect.getfile(has_side_effect))),
)


class ShapeGuardError(RuntimeError):
    """A graph ran on a shape for which the traced branch does not hold.

    The message names the module and ``file:line`` of the decision, the
    value seen while tracing and the value seen now.
    """


#: How Python turned a traced value into the answer it used, by name (a
#: graph argument must be a plain value).
CONVERSIONS: Dict[str, Callable[[Any], Any]] = {
    'bool': bool,
    'int': int,
    'float': float,
    'index': operator.index,
}


def check_shape_guard(value: Any, convert: str, expected: Any,
                      site: str) -> None:
    """Raise :class:`ShapeGuardError` unless ``convert(value) == expected``.

    Args:
        value (Any): The shape-derived value at run time (a bool, an int or
            a ``torch.Size``).
        convert (str): How Python turned it into the answer that was
            baked in, a key of :data:`CONVERSIONS`.
        expected (Any): That answer when the graph was traced.
        site (str): Where the decision was made, for the message.

    Raises:
        ShapeGuardError: If the answers differ.
    """
    value = CONVERSIONS[convert](value)
    if value != expected:
        raise ShapeGuardError(
            f'The traced graph took a shape-dependent decision at {site} '
            f'for the value {expected!r}, but the input now gives '
            f'{value!r}. Trace the model at this input shape '
            '(CustomTracer(input_shape=...)) or keep this code out of the '
            'graph with skipped_methods / skipped_module_classes.')


# Guards have no output; keep dead-code elimination from removing them.
has_side_effect(check_shape_guard)


def decision_site(module_path: Optional[str] = None) -> str:
    """``module 'path' at file:line (function)`` of the innermost user frame.

    Args:
        module_path (str, optional): Qualified name of the module being
            traced. Defaults to None.

    Returns:
        str: The description used in guard messages.
    """
    frame = inspect.currentframe()
    where = 'an unknown place'
    while frame is not None:
        filename = os.path.abspath(frame.f_code.co_filename)
        if not filename.startswith(_MACHINERY_DIRS):
            where = (f'{frame.f_code.co_filename}:{frame.f_lineno} '
                     f'({frame.f_code.co_name})')
            break
        frame = frame.f_back
    del frame
    if module_path is None:
        return where
    return f"module '{module_path or '<root>'}' at {where}"
