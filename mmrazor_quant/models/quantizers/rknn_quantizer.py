"""Quantizer for Rockchip's NPU (RKNN, built by rknn-toolkit2)."""
from typing import Dict, List

from torch import fx, nn

from mmrazor_quant.registry import MODELS
from .backend_spec import BackendSpec, TensorSpec
from .base import BaseQuantizer
from .op_kinds import OpKind, classify_node
from .passes.insert_fake_quants import ACT_FAKE_QUANTS, is_fake_quant_node
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
      ``Conv+BN+ReLU`` (``Conv+Clip`` for ReLU6) into one op with one
      output quantization;
    * except the output of a conv that only a residual add reads: the
      toolkit fuses that conv into the add (its ``ConvAdd`` op, the add's
      first such input, e.g. ResNet's ``conv2`` and not the downsample
      conv), which adds the conv's int32 result without rounding it to a
      grid of its own; the add's output is quantized;
    * the output of average pooling, which the toolkit runs as a
      depthwise conv (the ``.rknn`` build writes a global one as that conv,
      see :mod:`~mmrazor_quant.deploy.rknn.toolkit_encoding`); on its
      input's grid, the mean of ``H * W`` integers would be an exact tie
      for one output in ``H * W``, which the toolkit's float32 simulator
      breaks either way;
    * max pooling, ReLU and shape ops (reshape, flatten) keep the grid, so
      they carry no fake quant of their own (the NPU requires the same
      quantization on the input and output of these and of concat);
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
            OpKind.MATMUL, OpKind.ATTN_MATMUL, OpKind.AVGPOOL
        }),
        fold_activations=True,
        quantize_model_input=True)
    scheme = BackendSpec(
        supported_bits=(8, ),
        weight=TensorSpec(qdtypes=('qint8', ), symmetric=True,
                          per_channel=True),
        activation=TensorSpec(qdtypes=('qint8', ), symmetric=False,
                              per_channel=False),
        rounding='half_even')
    #: rknn-toolkit2 re-quantizes the weights it reads
    #: (:mod:`~mmrazor_quant.deploy.rknn.toolkit_encoding`), which is
    #: modelled for ``Conv`` and ``Gemm`` only: a transposed conv keeps its
    #: float weight rather than a grid the toolkit may not keep.
    quantizes_transposed_convs = False

    def _remove_requested(self, model: nn.Module,
                          graphs: Dict[str, fx.Graph]) -> None:
        unquantize_fused_sums(model, graphs)
        super()._remove_requested(model, graphs)


#: Modules that are the identity at inference (e.g. a drop path at rate 0).
_IDENTITY_MODULES = (nn.Identity, nn.Dropout)


def _through_identities(node, modules: Dict[str, nn.Module]):
    """``node``, or what it reads through single-use identity modules."""
    while isinstance(node, fx.Node) and node.op == 'call_module' and \
            isinstance(modules.get(str(node.target)), _IDENTITY_MODULES) \
            and len(node.users) == 1 and node.args:
        node = node.args[0]
    return node


def _fused_sum_input(add: fx.Node, modules: Dict[str, nn.Module]):
    """The fake quant on ``add``'s first input (seen through identity
    modules) that quantizes a conv or linear output nothing else reads
    (None if there is none)."""
    for arg in add.args[:2]:
        arg = _through_identities(arg, modules)
        if not (isinstance(arg, fx.Node) and is_fake_quant_node(arg)
                and len(arg.users) == 1):
            continue
        src = arg.args[0]
        if isinstance(src, fx.Node) and len(src.users) == 1 and \
                not is_fake_quant_node(src) and classify_node(
                    src, modules) in (OpKind.CONV, OpKind.LINEAR):
            return arg
    return None


def unquantize_fused_sums(model: nn.Module,
                          graphs: Dict[str, fx.Graph]) -> List[str]:
    """Remove the fake quant between a conv/linear and the residual add
    rknn-toolkit2 fuses it into (``ConvAdd``), in every graph and from
    ``model.act_fake_quants``.

    Returns:
        list[str]: The names of the removed fake quants, sorted.
    """
    modules = dict(model.named_modules())
    removed = set()
    for graph in graphs.values():
        for node in list(graph.nodes):
            if node.op == 'output' or classify_node(
                    node, modules) != OpKind.ADD:
                continue
            fq = _fused_sum_input(node, modules)
            if fq is not None:
                fq.replace_all_uses_with(fq.args[0])
                graph.erase_node(fq)
                removed.add(str(fq.target))
        graph.lint()
    used = {str(n.target) for g in graphs.values() for n in g.nodes
            if n.op == 'call_module'}
    container = getattr(model, ACT_FAKE_QUANTS)
    names = sorted(t.split('.', 1)[1] for t in removed - used)
    for name in names:
        del container[name]
    return names
