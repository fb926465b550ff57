"""Backend plugins: one registered class per deploy target, binding its
quantizer, exporter and parity runtime (see :class:`BaseBackend`).

Importing this package imports no quantizer, exporter or runtime."""
from .base import BaseBackend, all_backends, backend_names, get_backend
from .litert import LiteRTBackend
from .ncnn import NCNNBackend  # noqa: F401
from .onnxruntime import ONNXRuntimeBackend
from .openvino import OpenVINOBackend
from .rknn import RKNNBackend
from .simulated import AcademicBackend, NativeBackend
from .tensorrt import TensorRTBackend

__all__ = [
    'BaseBackend', 'all_backends', 'backend_names', 'get_backend',
    'ONNXRuntimeBackend', 'OpenVINOBackend', 'TensorRTBackend',
    'RKNNBackend', 'NativeBackend', 'AcademicBackend', 'LiteRTBackend'
]
