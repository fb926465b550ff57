"""onnxruntime: its exporter (standard QDQ ONNX), the graph passes of that
export and its runtime plugin."""
from .exporter import ONNXRuntimeExporter
from .passes import drop_clips_inside_grid
from .runtime import ONNXRuntime

__all__ = ['ONNXRuntimeExporter', 'ONNXRuntime', 'drop_clips_inside_grid']
