"""The ONNX opsets an export can target, named once for every module that
checks or picks one."""

__all__ = [
    'QDQ_MIN_OPSET', 'MIN_OPSET', 'DEFAULT_OPSET', 'DYNAMO_MIN_OPSET',
    'LOW_BIT_OPSET', 'MAX_OPSET'
]

#: ``QuantizeLinear`` / ``DequantizeLinear`` exist (per-tensor only).
QDQ_MIN_OPSET = 10
#: Per-channel ``QuantizeLinear`` (``axis``): the lowest opset exported.
MIN_OPSET = 13
#: Understood by onnxruntime, OpenVINO and TensorRT >= 8.6.
DEFAULT_OPSET = 17
#: The dynamo exporter's lowest opset.
DYNAMO_MIN_OPSET = 18
#: INT4/UINT4 and 16-bit Q/DQ and ``QuantizeLinear``'s ``output_dtype``
#: appear; grids of at most 4 bits export at this opset by default.
LOW_BIT_OPSET = 21
#: The highest opset exports are checked at.
MAX_OPSET = LOW_BIT_OPSET
