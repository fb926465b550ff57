from .academic_quantizer import AcademicQuantizer
from .backend_spec import BackendSpec, TensorSpec  # noqa: F401
from .base import BaseQuantizer
from .litert_quantizer import LiteRTQuantizer
from .native_quantizer import TorchNativeQuantizer
from .ncnn_quantizer import NCNNQuantizer  # noqa: F401
from .op_kinds import OpKind, classify_node
from .openvino_quantizer import OpenVINOQuantizer
from .rknn_quantizer import RKNNQuantizer
from .rules import InputSelector, QuantRules
from .tensorrt_quantizer import TensorRTQuantizer

__all__ = [
    'BaseQuantizer', 'TorchNativeQuantizer', 'OpenVINOQuantizer',
    'TensorRTQuantizer', 'RKNNQuantizer', 'AcademicQuantizer', 'QuantRules',
    'InputSelector', 'OpKind', 'classify_node', 'LiteRTQuantizer'
]
