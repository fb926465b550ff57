"""Methods every :class:`CustomTracer` records as one node: MMRazor's
``UntracedMethodRegistry`` decorator."""
from typing import Any, Callable, Dict, List, Optional, Tuple

__all__ = ['UntracedMethodRegistry']


class UntracedMethodRegistry:
    """Mark a method as untraced: every :class:`CustomTracer` records a call
    to it as one ``call_method`` node instead of tracing through it, as a
    ``skipped_methods`` entry would.

    Use it as a decorator in a class body, or call ``__set_name__`` by hand
    as MMRazor's tracer did. The class keeps the plain function, so the
    method runs as before outside tracing.

    Example:
        >>> class Head(nn.Module):
        ...     @UntracedMethodRegistry
        ...     def _get_loss(self, x, data_samples):
        ...         ...

    Args:
        method (callable): The function to register.
    """
    #: ``'module.Class.method'`` -> ``dict(mod=owner class, name=method)``.
    method_dict: Dict[str, Dict[str, Any]] = {}

    def __init__(self, method: Callable) -> None:
        self.method = method
        self.owner: Optional[type] = None
        self.name: Optional[str] = None

    def __set_name__(self, owner: type, name: str) -> None:
        self.owner, self.name = owner, name
        path = f'{owner.__module__}.{owner.__qualname__}.{name}'
        type(self).method_dict[path] = dict(mod=owner, name=name)
        # The class keeps the function itself: only tracers skip it.
        setattr(owner, name, self.method)

    @classmethod
    def registered(cls) -> List[Tuple[type, str]]:
        """``(class, method name)`` of every registered method."""
        return [(v['mod'], v['name']) for v in cls.method_dict.values()]
