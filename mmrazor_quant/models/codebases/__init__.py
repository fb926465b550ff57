"""Codebase adapters: what is specific to each OpenMMLab codebase.

The adapters of the codebases (``mmcls.py``, ``mmdet.py``, ...) are
imported when a model or a config names their codebase, not with this
package (:mod:`mmrazor_quant.utils.codebase_imports`);
``from mmrazor_quant.models.codebases import MMDetCodebase`` imports its
module on first access.
"""
import importlib

from .base import BaseCodebase, InputShape
from .lookup import block_types_of, codebase_of, codebases_of, load_adapters
from .mmengine import MMEngineCodebase

#: Adapter class -> its module in this package.
_ADAPTERS = {
    'MMClsCodebase': 'mmcls',
    'MMDetCodebase': 'mmdet',
    'MMPoseCodebase': 'mmpose',
    'MMPretrainCodebase': 'mmpretrain',
    'MMSegCodebase': 'mmseg',
    'MMYOLOCodebase': 'mmyolo',
}

__all__ = [
    'BaseCodebase', 'InputShape', 'codebases_of', 'codebase_of',
    'block_types_of', 'load_adapters', 'MMEngineCodebase', *_ADAPTERS
]


def __getattr__(name: str):
    if name not in _ADAPTERS:
        raise AttributeError(f'module {__name__!r} has no attribute {name!r}')
    return getattr(
        importlib.import_module(f'.{_ADAPTERS[name]}', __name__), name)


def __dir__():
    return sorted(list(globals()) + __all__)
