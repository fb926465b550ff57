"""Find the codebase adapters of a model."""
import importlib
from typing import Iterable, List, Tuple

from torch import nn

from mmrazor_quant.registry import CODEBASES
from mmrazor_quant.utils.codebase_imports import CODEBASE_MODULES
from .base import BaseCodebase

__all__ = ['codebases_of', 'codebase_of', 'block_types_of', 'load_adapters']


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


def load_adapters() -> None:
    """Import the adapter of every codebase (e.g. to list them all); the
    adapters import nothing of their codebases."""
    for codebase in CODEBASE_MODULES.values():
        importlib.import_module(codebase.adapter)


def _import_adapters_of(model_cls: type) -> None:
    """Import our adapters of the codebases that define a class in
    ``model_cls``'s MRO (those of other packages come from the config's
    ``custom_imports``)."""
    for cls in model_cls.__mro__:
        codebase = CODEBASE_MODULES.get(cls.__module__.split('.')[0])
        if codebase is not None:
            importlib.import_module(codebase.adapter)


def _codebases_of_class(model_cls: type) -> List[BaseCodebase]:
    CODEBASES.import_from_location()
    _import_adapters_of(model_cls)
    found = []
    for index, cls in enumerate(CODEBASES.module_dict.values()):
        adapter = cls()
        depth = adapter.mro_depth(model_cls)
        if depth is not None:
            found.append((depth, index, adapter))
    return [adapter for _, _, adapter in sorted(found, key=lambda t: t[:2])]
