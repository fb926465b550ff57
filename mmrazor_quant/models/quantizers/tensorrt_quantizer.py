"""Quantizer for TensorRT's explicit (Q/DQ) int8 mode."""
from mmrazor_quant.registry import MODELS
from .backend_spec import BackendSpec, TensorSpec
from .base import BaseQuantizer
from .op_kinds import OpKind
from .rules import InputSelector, QuantRules

__all__ = ['TensorRTQuantizer']


@MODELS.register_module()
class TensorRTQuantizer(BaseQuantizer):
    """Quantize as TensorRT executes an explicitly quantized network.

    TensorRT fuses a Q/DQ pair into the op that consumes it, so fake quants
    sit on **inputs**:

    * the data input of conv and linear, and both inputs of both attention
      matmuls (``Q @ K^T`` and ``attn @ V``: TensorRT's int8 multi-head
      attention fusion wants Q/DQ on Q, K, V and on the softmax output);
    * the input of max and average pooling (TensorRT runs them in int8);
    * of a residual add, only the input that does not come straight from a
      conv: TensorRT fuses conv + add (+ ReLU) and needs the other branch in
      int8;
    * LayerNorm and softmax run in higher precision, GELU is fused into the
      producing GEMM: none is quantized; the consuming linear or matmul
      quantizes their output;
    * ReLU and shape ops keep the grid; a fake quant that would re-quantize
      a max-pooled tensor is removed as redundant.

    Schemes it executes: signed symmetric int8 for weights (per-channel) and
    activations (per-tensor), zero-point 0, scale ``amax / 127`` with
    ``is_symmetric_range=True``; rounding half to even.
    """
    backend = 'tensorrt'
    rules = QuantRules(
        quantized_inputs={
            OpKind.CONV: InputSelector.FIRST,
            OpKind.LINEAR: InputSelector.FIRST,
            OpKind.MATMUL: InputSelector.ALL,
            OpKind.ATTN_MATMUL: InputSelector.ALL,
            OpKind.ADD: InputSelector.RESIDUAL,
            OpKind.AVGPOOL: InputSelector.FIRST,
            OpKind.MAXPOOL: InputSelector.FIRST,
        })
    scheme = BackendSpec(
        supported_bits=(8, ),
        weight=TensorSpec(qdtypes=('qint8', ), symmetric=True),
        activation=TensorSpec(
            qdtypes=('qint8', ), symmetric=True, per_channel=False),
        rounding='half_even')
