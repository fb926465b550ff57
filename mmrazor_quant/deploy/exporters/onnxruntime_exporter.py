"""Exporter for onnxruntime: standard QDQ ONNX."""
from mmrazor_quant.registry import EXPORTERS
from .base import BaseExporter

__all__ = ['ONNXRuntimeExporter']


@EXPORTERS.register_module(name='onnxruntime')
@EXPORTERS.register_module()
class ONNXRuntimeExporter(BaseExporter):
    """QDQ ONNX that onnxruntime's CPU provider fuses into int8 kernels.

    Grids narrower than their ONNX type (e.g. 7-bit activations, which
    avoid the u8 x s8 saturation of CPUs without VNNI) get a clip before
    ``QuantizeLinear``, so the runtime matches the simulation exactly.
    """
    backend = 'onnxruntime'

    def verify_loads(self, path: str) -> None:
        import onnxruntime as ort
        ort.InferenceSession(path, providers=['CPUExecutionProvider'])
