"""One exporter per deploy target, registered in ``EXPORTERS``."""
from ..ncnn.exporter import NCNNExporter  # noqa: F401
from .base import BaseExporter, ExportResult
from .builder import build_exporter
from .litert_exporter import LiteRTExporter
from .onnxruntime_exporter import ONNXRuntimeExporter
from .openvino_exporter import OpenVINOExporter
from .rknn_exporter import RKNNExporter
from .tensorrt_exporter import TensorRTExporter

__all__ = [
    'BaseExporter', 'ExportResult', 'ONNXRuntimeExporter',
    'OpenVINOExporter', 'RKNNExporter', 'TensorRTExporter', 'build_exporter',
    'LiteRTExporter'
]
