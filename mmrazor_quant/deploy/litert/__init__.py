"""LiteRT (TFLite): QDQ ONNX to an int8 ``.tflite`` with this project's
qparams, its exporter, and the interpreter as a runtime. Importing this
package imports neither ``tflite`` nor ``ai_edge_litert``."""
from .exporter import LiteRTExporter
from .onnx_to_tflite import SUPPORTED_OPS, UnsupportedOpError, convert_qdq_onnx
from .runtime import LiteRTRuntime, tflite_path_of

__all__ = [
    'convert_qdq_onnx', 'UnsupportedOpError', 'SUPPORTED_OPS',
    'LiteRTExporter', 'LiteRTRuntime', 'tflite_path_of'
]
