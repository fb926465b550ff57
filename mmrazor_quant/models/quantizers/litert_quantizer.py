"""Quantizer for LiteRT (TFLite) full-integer int8 models."""
from typing import Dict, Optional, Sequence, Tuple

from torch import fx, nn

from mmrazor_quant.backends.litert import SOFTMAX_QPARAMS
from mmrazor_quant.models.fake_quants import FixedFakeQuantize
from mmrazor_quant.registry import MODELS
from .backend_spec import BackendSpec, TensorSpec
from .base import BaseQuantizer
from .litert_int8_matmul import simulate_int8_matmuls
from .op_kinds import OpKind, classify_node
from .passes.insert_fake_quants import ACT_FAKE_QUANTS
from .rules import QuantRules

__all__ = ['LiteRTQuantizer', 'SOFTMAX_QPARAMS']


@MODELS.register_module()
class LiteRTQuantizer(BaseQuantizer):
    """Quantize as LiteRT (TFLite) runs a full-integer int8 model.

    TFLite's int8 kernels read and write int8 tensors, so quantized tensors
    flow from op to op and fake quants sit on **outputs** (as the TFLite
    converter places them):

    * the model's input;
    * the outputs of conv, linear, add, mul, matmul and concat, placed after
      a following ReLU/ReLU6/clamp: CONV_2D, DEPTHWISE_CONV_2D,
      FULLY_CONNECTED and ADD carry it as their fused activation (BN is
      folded into the conv before);
    * the outputs of GELU and LayerNorm (LayerNorm has no int8 kernel: it
      runs in float between a DEQUANTIZE and this QUANTIZE);
    * the softmax output on the spec's fixed grid, scale 1/256 and
      zero-point -128 (:data:`SOFTMAX_QPARAMS`), never calibrated;
    * average pooling keeps its input's scale and zero-point (the spec's
      restriction on AVERAGE_POOL_2D); max pooling, ReLU and reshapes keep
      the grid;
    * a constant operand of an add or mul (a ViT's position embedding):
      TFLite's int8 ADD/MUL read it as an int8 tensor, quantized per
      tensor on its own range; a fake quant (calibrated like the
      activations) simulates that.

    Schemes it executes (the TFLite int8 spec): weights int8 symmetric per
    output channel on ``[-127, 127]`` (zero-point 0); activations int8 per
    tensor on ``[-128, 127]``, asymmetric (a symmetric grid is the
    zero-point-0 case); 8 bit; rounding half to even (the bias is int32 on
    ``s_in * s_w``, see the exporter).

    A matmul of two int8 tensors (attention's ``Q @ K^T`` and ``attn @ V``)
    runs as LiteRT's int8 BATCH_MATMUL computes it
    (:func:`~.litert_int8_matmul.tflite_int8_matmul`): in TFLite's builtin
    kernel, the exact int32 product requantized with a fixed-point
    multiplier, which rounds twice; in XNNPACK (second operand with
    zero-point 0), in float32, rounding once, as the convs and linears
    (the simulation follows the interpreter with its default XNNPACK
    delegate, the ``litert`` runtime's default).
    """
    backend = 'litert'
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
        supported_bits=(8, ),
        weight=TensorSpec(
            qdtypes=('qint8', ), symmetric=True, symmetric_range=True,
            per_channel=True, quant_ranges={8: (-127, 127)}),
        activation=TensorSpec(
            qdtypes=('qint8', ), symmetric_range=False, per_channel=False,
            quant_ranges={8: (-128, 127)}),
        rounding='half_even')

    #: Op kinds whose constant operands are int8 tensors in TFLite.
    constant_operand_ops = frozenset({OpKind.ADD, OpKind.MUL})
    #: The ONNX-to-TFLite converter writes no TRANSPOSE_CONV
    #: (:mod:`~mmrazor_quant.deploy.litert.onnx_to_tflite`): a transposed
    #: conv keeps its float weight.
    quantizes_transposed_convs = False

    def prepare(self, model: nn.Module,
                forward_modes: Sequence[str] = ('tensor', )
                ) -> Dict[str, fx.GraphModule]:
        """See :meth:`BaseQuantizer.prepare`; then quantizes the constant
        operands of adds and muls (one fake quant per constant, shared by
        every mode) and simulates the int8 matmuls of two activations with
        TFLite's integer arithmetic
        (:func:`~.litert_int8_matmul.simulate_int8_matmuls`)."""
        graph_modules = super().prepare(model, forward_modes)
        made: Dict[str, nn.Module] = {}
        for gm in graph_modules.values():
            self._quantize_constant_operands(model, gm, made)
            simulate_int8_matmuls(gm)
        return graph_modules

    def _quantize_constant_operands(self, root: nn.Module,
                                    gm: fx.GraphModule,
                                    made: Dict[str, nn.Module]) -> None:
        modules = dict(gm.named_modules())
        container = getattr(root, ACT_FAKE_QUANTS)
        changed = False
        for node in list(gm.graph.nodes):
            if classify_node(node, modules) not in self.constant_operand_ops:
                continue
            for const in [a for a in node.args if isinstance(a, fx.Node)
                          and a.op == 'get_attr']:
                name = str(const.target).replace('.', '_')
                if name not in made:
                    fake_quant = self.qconfig.build_activation_fake_quant()
                    fake_quant.name = str(const.target)
                    container[name] = made[name] = fake_quant
                target = f'{ACT_FAKE_QUANTS}.{name}'
                if target not in modules:
                    gm.add_submodule(target, made[name])
                    modules[target] = made[name]
                with gm.graph.inserting_after(const):
                    fq = gm.graph.call_module(target, (const, ))
                node.replace_input_with(const, fq)
                changed = True
        if changed:
            gm.graph.lint()
            gm.recompile()

    def _activation_fake_quant(self, key: str, consumer: Optional[fx.Node],
                               consumer_name: Optional[str]
                               ) -> Optional[Tuple[nn.Module, str]]:
        made = super()._activation_fake_quant(key, consumer, consumer_name)
        if made is None or consumer is None or classify_node(
                consumer, self._modules_cache) != OpKind.SOFTMAX:
            return made
        fake_quant, tag = made
        scale, zero_point = SOFTMAX_QPARAMS
        fixed = FixedFakeQuantize(
            qscheme=fake_quant.qscheme, scale=scale, zero_point=zero_point)
        return fixed, tag
