"""OpenVINO: its exporter (QDQ ONNX read as FakeQuantize), the graph passes
of that export and its runtime plugin."""
from .exporter import OpenVINOExporter
from .runtime import OpenVINORuntime

__all__ = ['OpenVINOExporter', 'OpenVINORuntime']
