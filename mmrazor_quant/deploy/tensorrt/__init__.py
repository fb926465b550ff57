"""TensorRT: its exporter (explicit QDQ ONNX or a float ONNX with ranges).
Its parity runtime is onnxruntime with TensorRT's float arithmetic."""
from .exporter import TensorRTExporter

__all__ = ['TensorRTExporter']
