"""A toy OpenMMLab-style codebase with its adapter, written entirely
outside the library.

Import this package (``custom_imports = dict(imports=['toy_codebase'])`` in
a config) and the model ``TallyNet`` and its adapter ``TallyCodebase`` are
registered.
"""
from .codebase import TallyCodebase
from .models import TallyNet

__all__ = ['TallyNet', 'TallyCodebase']
