"""Quantizer for torch's native quantized engine (x86 / fbgemm / qnnpack)."""
from mmrazor_quant.registry import MODELS
from .backend_spec import UP_TO_8_BITS, BackendSpec, TensorSpec
from .base import BaseQuantizer
from .op_kinds import OpKind
from .rules import QuantRules

__all__ = ['TorchNativeQuantizer']


@MODELS.register_module('NativeQuantizer')
@MODELS.register_module()
class TorchNativeQuantizer(BaseQuantizer):
    """Quantize as torch's native quantized kernels execute a model.

    Quantized tensors flow from op to op, so fake quants sit on **outputs**:

    * the model's image input;
    * the outputs of conv, linear, add, mul, matmul and concat, placed after
      a following ReLU/ReLU6/clamp that the kernels fuse (``conv+relu``,
      ``add+relu``);
    * the outputs of LayerNorm, GELU and softmax (torch has quantized
      kernels for the three, each requantizing its output);
    * average pooling re-quantizes with its input's qparams (the quantized
      kernel keeps them), max pooling, ReLU and shape ops keep the grid.

    Schemes it executes: weights signed (``qint8``), per-channel or
    per-tensor; activations unsigned (``quint8``); at most 8 bit; rounding
    half to even.
    """
    backend = 'native'
    rules = QuantRules(
        quantized_outputs=frozenset({
            OpKind.CONV, OpKind.LINEAR, OpKind.ADD, OpKind.MUL, OpKind.CAT,
            OpKind.MATMUL, OpKind.ATTN_MATMUL, OpKind.NORM, OpKind.GELU,
            OpKind.SOFTMAX, OpKind.SWISH
        }),
        fold_activations=True,
        share_input_qparams=frozenset({OpKind.AVGPOOL}),
        quantize_model_input=True)
    scheme = BackendSpec(
        supported_bits=UP_TO_8_BITS,
        weight=TensorSpec(qdtypes=('qint8', )),
        activation=TensorSpec(qdtypes=('quint8', ), per_channel=False),
        rounding='half_even')
