"""The ``'tensor'``-mode GraphModule that PTQ passes, deploy and analysis
work on."""
from mmengine.model import is_model_wrapper
from torch import fx, nn

__all__ = ['tensor_graph_module']


def tensor_graph_module(model: nn.Module) -> fx.GraphModule:
    """The GraphModule of ``model``'s ``'tensor'`` forward mode.

    Args:
        model (nn.Module): An ``MMArchitectureQuant`` (its
            ``qmodels['tensor']``), a model wrapper around one (DDP), or a
            GraphModule returned by ``quantizer.prepare`` (returned as is).

    Returns:
        fx.GraphModule: The graph; its modules are shared with ``model``.

    Raises:
        TypeError: If ``model`` is neither an ``MMArchitectureQuant`` nor a
            GraphModule.
        ValueError: If the ``'tensor'`` mode was not traced, listing the
            modes that were.
    """
    if is_model_wrapper(model):
        model = model.module
    if isinstance(model, fx.GraphModule):
        return model
    qmodels = getattr(model, 'qmodels', None)
    if qmodels is None:
        raise TypeError("expected an MMArchitectureQuant traced with the "
                        "'tensor' forward mode, or a quantized "
                        f'fx.GraphModule; got {type(model).__name__}')
    if 'tensor' not in qmodels:
        raise ValueError("this step runs the 'tensor' forward mode; add it "
                         f'to forward_modes (traced: {sorted(qmodels)})')
    return qmodels['tensor']
