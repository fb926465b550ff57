"""Layer classes that are torch layers in all but name."""
from torch import nn

__all__ = ['plain_layer_type']

#: Python modules whose layer classes only add an empty-tensor special case
#: to torch's ``forward`` (mmcv's ``Linear``/``Conv2d``/... wrappers, used by
#: mmcv's ``FFN`` in every mmcls transformer): they are traced as leaves and
#: quantized as the torch layer they wrap.
_WRAPPER_MODULES = ('mmcv.cnn.bricks.wrappers', )


def plain_layer_type(module: nn.Module) -> type:
    """``type(module)``, or for one of mmcv's empty-tensor wrappers the
    ``torch.nn`` layer class it wraps."""
    cls = type(module)
    if cls.__module__ in _WRAPPER_MODULES:
        for base in cls.__mro__[1:]:
            if base.__module__.startswith('torch.nn'):
                return base
    return cls
