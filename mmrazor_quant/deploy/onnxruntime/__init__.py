"""onnxruntime: its runtime plugin and the passes of its QDQ export."""
from .runtime import ONNXRuntime

__all__ = ['ONNXRuntime']
