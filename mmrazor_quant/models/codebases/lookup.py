"""Find the codebase adapters of a model."""
from typing import Iterable, List, Tuple

from torch import nn

from mmrazor_quant.registry import CODEBASES
from .base import BaseCodebase

__all__ = ['codebases_of', 'codebase_of', 'block_types_of']


def codebases_of(model: nn.Module) -> List[BaseCodebase]:
    """The registered adapters that handle ``model``, most specific first.

    An adapter handles a model when one of the classes in the model's MRO
    lives in one of its ``packages``; the adapter of the class nearest to
    the model's own comes first (an mmyolo detector subclassing mmdet's
    gets mmyolo's adapter, then mmdet's, then the generic mmengine one).

    Args:
        model (nn.Module): The float model (e.g. an mmcls
            ``ImageClassifier``).

    Returns:
        list[BaseCodebase]: Possibly empty (a plain ``nn.Module``).
    """
    return _codebases_of_class(type(model))


def codebase_of(model: nn.Module) -> BaseCodebase:
    """The most specific adapter of ``model``; the generic mmengine one
    (nothing codebase-specific) when none handles it."""
    found = codebases_of(model)
    return found[0] if found else CODEBASES.get('MMEngineCodebase')()


def block_types_of(modules: Iterable[nn.Module]) -> Tuple[str, ...]:
    """The block class names that reconstruction treats as units among
    ``modules`` (e.g. ``model.modules()``): those of the adapters of every
    module class there (so a GraphModule over an mmcls backbone gets
    mmcls's), each once."""
    names: List[str] = []
    for cls in sorted({type(m) for m in modules},
                      key=lambda c: (c.__module__, c.__qualname__)):
        for adapter in _codebases_of_class(cls):
            names.extend(adapter.block_types)
    return tuple(dict.fromkeys(names))


def _codebases_of_class(model_cls: type) -> List[BaseCodebase]:
    CODEBASES.import_from_location()
    found = []
    for index, cls in enumerate(CODEBASES.module_dict.values()):
        adapter = cls()
        depth = adapter.mro_depth(model_cls)
        if depth is not None:
            found.append((depth, index, adapter))
    return [adapter for _, _, adapter in sorted(found, key=lambda t: t[:2])]
