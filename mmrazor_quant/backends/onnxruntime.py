"""onnxruntime's CPU provider: standard QDQ ONNX, int8 kernels."""
from mmrazor_quant.registry import BACKENDS
from .base import BaseBackend

__all__ = ['ONNXRuntimeBackend']


@BACKENDS.register_module()
class ONNXRuntimeBackend(BaseBackend):
    """onnxruntime runs any standard QDQ model, so it has no quantizer of
    its own: a model prepared for no target in particular (native,
    academic) deploys here. Its exporter puts the biases on the int32 grid
    of the int8 kernels first (see :class:`ONNXRuntimeExporter`)."""
    name = 'onnxruntime'
    exporter = 'ONNXRuntimeExporter'
    runtime = 'onnxruntime'
    # models prepared for it by default: torch's native placement
    placement_of = 'native'
