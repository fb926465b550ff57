"""TensorRT: explicit QDQ ONNX, or a float ONNX with ranges (implicit)."""
from typing import Dict, Mapping

from mmrazor_quant.registry import BACKENDS
from .base import BaseBackend

__all__ = ['TensorRTBackend']


@BACKENDS.register_module()
class TensorRTBackend(BaseBackend):
    """TensorRT's int8 modes with :class:`TensorRTQuantizer`'s placement.

    There is no TensorRT on CPU: the explicit QDQ model is checked in
    onnxruntime with the Q/DQ fusion off, i.e. float ops on dequantized
    values with float biases, which is TensorRT's arithmetic (onnxruntime's
    own int8 kernels would round the biases to int32 and, on CPUs without
    VNNI, saturate u8 x s8 pairs; TensorRT does neither).

    ``backend_config.common_config.int8_mode`` without
    ``explicit_quant_mode`` asks for the implicit mode (a float ONNX plus a
    ranges JSON that TensorRT applies at build time).
    """
    name = 'tensorrt'
    quantizer = 'TensorRTQuantizer'
    exporter = 'TensorRTExporter'
    runtime = 'onnxruntime'
    runtime_options = dict(qdq_fusion=False)
    w8a8 = dict(
        w_qscheme=dict(
            qdtype='qint8', bit=8, is_symmetry=True, is_symmetric_range=True),
        a_qscheme=dict(qdtype='qint8', bit=8, is_symmetry=True))

    def parse_backend_config(self, backend_cfg: Mapping) -> Dict:
        common = backend_cfg.get('common_config', {}) or {}
        implicit = bool(common.get('int8_mode', False)) and \
            not common.get('explicit_quant_mode', False)
        return dict(implicit=implicit)
