"""Exporter for OpenVINO's CPU plugin."""
from torch import fx

from mmrazor_quant.registry import EXPORTERS
from .base import BaseExporter, quantized_tensors

__all__ = ['OpenVINOExporter']


@EXPORTERS.register_module(name='openvino')
@EXPORTERS.register_module()
class OpenVINOExporter(BaseExporter):
    """QDQ ONNX for OpenVINO, which reads each Q/DQ pair as a FakeQuantize
    and runs the ops whose inputs carry one in int8.

    Raises:
        ValueError: From :meth:`export` if a grid needs more than 8 bits
            (OpenVINO's int8 kernels take at most 256 levels).
    """
    backend = 'openvino'

    def check_model(self, model: fx.GraphModule) -> None:
        wide = [
            fq.name for fq in quantized_tensors(model)
            if fq.quant_max - fq.quant_min > 255
        ]
        if wide:
            raise ValueError(f'openvino: {len(wide)} fake quant(s) use more '
                             f'than 8 bits: {wide}')

    def verify_loads(self, path: str) -> None:
        import openvino as ov
        ov.Core().read_model(path)
