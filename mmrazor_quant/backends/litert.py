"""LiteRT (TFLite): a full-integer int8 ``.tflite`` written with this
project's qparams, run by the LiteRT interpreter."""
from typing import Dict, Mapping

from mmrazor_quant.registry import BACKENDS
from .base import BaseBackend

__all__ = ['LiteRTBackend', 'SOFTMAX_QPARAMS']

#: The int8 softmax output grid of the TFLite quantization spec:
#: scale 1/256, zero-point -128 (``[0, 255/256]``).
SOFTMAX_QPARAMS = (1.0 / 256.0, -128)


@BACKENDS.register_module()
class LiteRTBackend(BaseBackend):
    """LiteRT's int8 kernels with :class:`LiteRTQuantizer`'s placement (the
    TFLite int8 quantization spec).

    The exporter writes the QDQ ONNX and, beside it, the ``.tflite`` it
    converts that model into (every scale and zero-point the model's); the
    ``litert`` runtime runs the ``.tflite`` in ``ai_edge_litert``'s
    interpreter for the parity check.

    ``deploy_cfg.backend_config.float_ops`` (a list of ONNX op types) is the
    exporter's ``float_ops``.
    """
    name = 'litert'
    quantizer = 'LiteRTQuantizer'
    exporter = 'LiteRTExporter'
    runtime = 'litert'
    w8a8 = dict(
        w_qscheme=dict(
            qdtype='qint8', bit=8, is_symmetry=True, is_symmetric_range=True),
        a_qscheme=dict(qdtype='qint8', bit=8, is_symmetry=False))

    def parse_backend_config(self, backend_cfg: Mapping) -> Dict:
        if 'float_ops' not in backend_cfg:
            return {}
        float_ops = backend_cfg['float_ops']
        if isinstance(float_ops, str) or not all(
                isinstance(op, str) for op in float_ops):
            raise ValueError('deploy_cfg.backend_config.float_ops must be a '
                             f'list of ONNX op types, got {float_ops!r}')
        return dict(exporter_options=dict(float_ops=tuple(float_ops)))
