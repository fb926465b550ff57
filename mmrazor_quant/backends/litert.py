"""LiteRT (TFLite): a full-integer int8 ``.tflite`` written with this
project's qparams, run by the LiteRT interpreter."""
from mmrazor_quant.registry import BACKENDS
from .base import BaseBackend

__all__ = ['LiteRTBackend']


@BACKENDS.register_module()
class LiteRTBackend(BaseBackend):
    """LiteRT's int8 kernels with :class:`LiteRTQuantizer`'s placement (the
    TFLite int8 quantization spec).

    The exporter writes the QDQ ONNX and, beside it, the ``.tflite`` it
    converts that model into (every scale and zero-point the model's); the
    ``litert`` runtime runs the ``.tflite`` in ``ai_edge_litert``'s
    interpreter for the parity check.
    """
    name = 'litert'
    quantizer = 'LiteRTQuantizer'
    exporter = 'LiteRTExporter'
    runtime = 'litert'
    w8a8 = dict(
        w_qscheme=dict(
            qdtype='qint8', bit=8, is_symmetry=True, is_symmetric_range=True),
        a_qscheme=dict(qdtype='qint8', bit=8, is_symmetry=False))
