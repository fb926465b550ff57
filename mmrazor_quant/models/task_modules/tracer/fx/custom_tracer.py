"""MMRazor's tracer API (``tracer.fx.custom_tracer``) on our
:class:`~mmrazor_quant.models.task_modules.tracer.CustomTracer`."""
from typing import Any, Callable, Dict, List, Optional, Tuple, Union

from torch import fx, nn

from ..custom_tracer import CustomTracer, _share_children

__all__ = [
    'CustomTracer', 'UntracedMethodRegistry', 'build_graphmodule',
    'custom_symbolic_trace'
]


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


def build_graphmodule(model: nn.Module,
                      fx_graph: fx.Graph,
                      name: str = 'GraphModule') -> fx.GraphModule:
    """A GraphModule of ``fx_graph`` (traced from ``model`` by
    :class:`CustomTracer`) that shares ``model``'s submodules.

    Args:
        model (nn.Module): The traced model.
        fx_graph (fx.Graph): Its graph.
        name (str): Class name of the GraphModule.
            Defaults to ``'GraphModule'``.
    """
    gm = fx.GraphModule(model, fx_graph, class_name=name)
    _share_children(gm, model)
    return gm


def custom_symbolic_trace(
        root: Union[nn.Module, Callable[..., Any]],
        concrete_args: Optional[Dict[str, Any]] = None) -> fx.GraphModule:
    """``torch.fx.symbolic_trace`` with :class:`CustomTracer` (registered
    untraced methods stay single nodes).

    Args:
        root (nn.Module | callable): What to trace.
        concrete_args (dict, optional): Arguments to specialise.
            Defaults to None.
    """
    tracer = CustomTracer()
    graph = tracer.trace(root, concrete_args)
    name = type(root).__name__ if isinstance(root, nn.Module) \
        else root.__name__
    return fx.GraphModule(tracer.root, graph, class_name=name)
