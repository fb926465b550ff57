"""Quantizer for Rockchip's NPU (RKNN, built by rknn-toolkit2)."""
from mmrazor_quant.registry import MODELS
from .backend_spec import BackendSpec, TensorSpec
from .base import BaseQuantizer
from .op_kinds import OpKind
from .rules import QuantRules

__all__ = ['RKNNQuantizer']


@MODELS.register_module()
class RKNNQuantizer(BaseQuantizer):
    """Quantize as Rockchip's NPU runs rknn-toolkit2's int8 models.

    The scheme is the toolkit's ``asymmetric_quantized-8``.

    The NPU passes int8 tensors from op to op, each with one scale and
    zero-point, so fake quants sit on **outputs**, where the toolkit fuses:

    * the model's image input (the toolkit quantizes the float input with
      its qparams);
    * the outputs of conv (BN folded), linear (Gemm), add, mul, matmul and
      concat, after a following ReLU/ReLU6/clamp: the toolkit fuses
      ``Conv+BN+ReLU`` and ``Add+ReLU`` into one op with one output
      quantization;
    * average pooling keeps its input's qparams; max pooling, ReLU and
      shape ops (reshape, flatten) keep the grid, so they carry no fake
      quant of their own (the NPU requires the same quantization on the
      input and output of these and of concat);
    * LayerNorm, GELU and softmax are not quantized: a model that needs them
      is refused at export, naming the layer (the QDQ path of the toolkit
      needs every tensor between input and output in int8).

    Schemes it executes: activations int8 asymmetric per-tensor
    (``qdtype='qint8', is_symmetry=False``), weights int8 symmetric
    per-channel (zero-point 0), 8 bit only; rounding half to even.
    """
    backend = 'rknn'
    rules = QuantRules(
        quantized_outputs=frozenset({
            OpKind.CONV, OpKind.LINEAR, OpKind.ADD, OpKind.MUL, OpKind.CAT,
            OpKind.MATMUL, OpKind.ATTN_MATMUL
        }),
        fold_activations=True,
        share_input_qparams=frozenset({OpKind.AVGPOOL}),
        quantize_model_input=True)
    scheme = BackendSpec(
        supported_bits=(8, ),
        weight=TensorSpec(qdtypes=('qint8', ), symmetric=True,
                          per_channel=True),
        activation=TensorSpec(qdtypes=('qint8', ), symmetric=False,
                              per_channel=False),
        rounding='half_even')
