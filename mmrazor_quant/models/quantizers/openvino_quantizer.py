"""Quantizer for OpenVINO's CPU plugin (the NNCF placement)."""
from mmrazor_quant.registry import MODELS
from mmrazor_quant.structures.quantization import QSchema
from .base import BaseQuantizer
from .op_kinds import OpKind
from .rules import InputSelector, QuantRules

__all__ = ['OpenVINOQuantizer']


@MODELS.register_module()
class OpenVINOQuantizer(BaseQuantizer):
    """Quantize as OpenVINO executes an int8 model with FakeQuantize ops.

    OpenVINO runs an op in int8 when its **inputs** carry a FakeQuantize, so
    fake quants sit on inputs and outputs stay float:

    * the data input of conv and linear (after a preceding ReLU, since the
      ReLU is fused into the producing conv);
    * both inputs of eltwise add and mul, and of matmul;
    * the input of average pooling;
    * max pooling, ReLU, concat and reshapes are quantization-agnostic: the
      next quantized consumer quantizes their output.

    One fake quant per tensor is shared by all consumers that quantize it.
    Schemes it executes: weights signed symmetric (per-channel in practice),
    activations symmetric or asymmetric, at most 8 bit; rounding half to
    even.
    """
    backend = 'openvino'
    rules = QuantRules(
        quantized_inputs={
            OpKind.CONV: InputSelector.FIRST,
            OpKind.LINEAR: InputSelector.FIRST,
            OpKind.MATMUL: InputSelector.ALL,
            OpKind.ADD: InputSelector.ALL,
            OpKind.MUL: InputSelector.ALL,
            OpKind.AVGPOOL: InputSelector.FIRST,
        })

    def check_qschemes(self, w_qscheme: QSchema, a_qscheme: QSchema) -> None:
        self._require(w_qscheme.is_signed and w_qscheme.is_symmetry,
                      'w_qscheme', "signed symmetric (qdtype='qint8', "
                      'is_symmetry=True)')
        self._require(w_qscheme.bit <= 8, 'w_qscheme.bit', '<= 8')
        self._require(a_qscheme.bit <= 8, 'a_qscheme.bit', '<= 8')
