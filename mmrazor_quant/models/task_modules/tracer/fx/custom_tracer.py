"""MMRazor's tracer API (``tracer.fx.custom_tracer``) on our
:class:`~mmrazor_quant.models.task_modules.tracer.CustomTracer`."""
from typing import Any, Callable, Dict, Optional, Union

from torch import fx, nn

from ..custom_tracer import CustomTracer, _share_children
from ..untraced_methods import UntracedMethodRegistry

__all__ = [
    'CustomTracer', 'UntracedMethodRegistry', 'build_graphmodule',
    'custom_symbolic_trace'
]


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
