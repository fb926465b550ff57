"""A toy NPU backend, written entirely outside the library.

Import this package (``custom_imports = dict(imports=['toy_npu'])`` in a
config) and the quantizer ``ToyNPUQuantizer``, the exporter
``ToyNPUExporter``, the runtime ``toy_npu_reference`` and the backend
``toy_npu`` that binds them are registered.
"""
from .backend import ToyNPUBackend
from .exporter import ToyNPUExporter
from .quantizer import ToyNPUQuantizer
from .runtime import ToyNPUReference

__all__ = [
    'ToyNPUQuantizer', 'ToyNPUExporter', 'ToyNPUReference', 'ToyNPUBackend'
]
