"""A toy NPU backend, written entirely outside the library.

Import this package (``custom_imports = dict(imports=['toy_npu'])`` in a
config) and the quantizer ``ToyNPUQuantizer`` and the exporter ``toy_npu``
are registered.
"""
from .exporter import ToyNPUExporter
from .quantizer import ToyNPUQuantizer

__all__ = ['ToyNPUQuantizer', 'ToyNPUExporter']
