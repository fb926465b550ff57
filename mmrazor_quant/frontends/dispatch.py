"""Which operations of a quantized imported model stay float, and why.

As PPQ's dispatcher reports it: shape and index subgraphs are never
quantized, and an operation the target has no int8 kernel for (no fake
quant on any of its inputs in the target's placement) runs in float. Each
row names the node as the user's file does and its op type.
"""
from dataclasses import dataclass
from typing import Dict, List, Optional

from torch import fx, nn

from mmrazor_quant.models.fake_quants import BaseFakeQuantize
from mmrazor_quant.models.quantizers.op_kinds import OpKind, classify_node
from mmrazor_quant.models.utils import tensor_graph_module

__all__ = ['FloatOp', 'float_ops', 'format_float_ops']

#: Kinds that only carry values along (a quantized input stays quantized).
_PASS_THROUGH = (OpKind.SHAPE, OpKind.INPUT)

SHAPE_SUBGRAPH = 'shape/index subgraph'
NO_INT8 = 'no int8 kernel in the target placement'
BY_CONFIG = 'kept float by the config'
#: Activations a conv or linear layer runs as its post-op.
_FUSED_KINDS = (OpKind.ACTIVATION, OpKind.SWISH)


@dataclass
class FloatOp:
    """One operation that runs in float.

    Attributes:
        name (str): The node's name in the user's model (the ONNX node
            name; a module name for a torch model; the fx node name for a
            rewritten function).
        op_type (str): ONNX op type, or the torch module class / function.
        reason (str): :data:`SHAPE_SUBGRAPH`, :data:`NO_INT8` or
            :data:`BY_CONFIG`.
    """
    name: str
    op_type: str
    reason: str


def _is_quant(node, modules: Dict[str, nn.Module]) -> bool:
    if not isinstance(node, fx.Node) or node.op != 'call_module':
        return False
    return isinstance(modules.get(node.target), BaseFakeQuantize)


def _quantized_input(node: fx.Node, modules: Dict[str, nn.Module]) -> bool:
    """Whether a float input of ``node`` is a fake quant's output, seen
    through value-moving ops."""
    for arg in node.all_input_nodes:
        seen = 0
        while isinstance(arg, fx.Node) and seen < 16:
            if _is_quant(arg, modules):
                return True
            if arg.op != 'call_module' and arg.op != 'call_function' and \
                    arg.op != 'call_method':
                break
            if classify_node(arg, modules) != OpKind.SHAPE or \
                    not arg.all_input_nodes:
                break
            arg, seen = arg.all_input_nodes[0], seen + 1
    return False


def _after_layer(node: fx.Node, modules: Dict[str, nn.Module]) -> bool:
    """An activation right after a conv/linear layer (its post-op)."""
    arg = node.all_input_nodes[0] if node.all_input_nodes else None
    return arg is not None and classify_node(arg, modules) in (
        OpKind.CONV, OpKind.LINEAR)


def _kept_float(qmodel: nn.Module, node: fx.Node,
                modules: Dict[str, nn.Module]) -> bool:
    quantizer = getattr(qmodel, 'quantizer', None)
    if quantizer is None or node.op != 'call_module':
        return False
    name = node.target
    qconfig, tag = quantizer.qconfig_mapping.lookup(name, modules[name])
    return tag is not None and qconfig is None


def _names(architecture: nn.Module, node: fx.Node,
           modules: Dict[str, nn.Module]):
    """(name, op type, in the shape subgraph) of ``node``."""
    info = getattr(architecture, 'onnx_info', None)
    if node.op == 'call_module':
        key = node.target.split('net.', 1)[-1] \
            if node.target.startswith(('net.', 'architecture.net.')) \
            else node.target
        if info is not None and key in info.nodes:
            return (info.onnx_name(key), info.op_type(key),
                    key in info.shape_modules)
        name = node.target[len('net.'):] if node.target.startswith(
            'net.') else node.target
        return name, type(modules[node.target]).__name__, False
    target = getattr(node.target, '__name__', str(node.target))
    return node.name, target, False


def float_ops(qmodel: nn.Module) -> List[FloatOp]:
    """The operations of ``qmodel``'s ``tensor`` graph that run in float.

    Args:
        qmodel (MMArchitectureQuant): A quantized imported (or any) model.

    Returns:
        list[FloatOp]: In graph order; getattr/placeholder/output nodes,
        fake quants and pure value-moving ops are left out.
    """
    gm = tensor_graph_module(qmodel)
    architecture: Optional[nn.Module] = getattr(qmodel, 'architecture', None)
    modules = dict(gm.named_modules())
    rows = []
    for node in gm.graph.nodes:
        if node.op not in ('call_module', 'call_function', 'call_method') \
                or _is_quant(node, modules):
            continue
        name, op_type, in_shape = _names(architecture, node, modules)
        if in_shape:
            rows.append(FloatOp(name, op_type, SHAPE_SUBGRAPH))
            continue
        kind = classify_node(node, modules)
        if kind in _PASS_THROUGH or node.meta.get('example_kind') == 'other' \
                or kind in _FUSED_KINDS and _after_layer(node, modules):
            continue
        if _kept_float(qmodel, node, modules):
            rows.append(FloatOp(name, op_type, BY_CONFIG))
        elif not _quantized_input(node, modules):
            rows.append(FloatOp(name, op_type, NO_INT8))
    return rows


def format_float_ops(rows: List[FloatOp]) -> str:
    """The report as a text table."""
    width = max([len(r.name) for r in rows] + [4])
    lines = [f'{"node":<{width}}  {"op type":<20}  why float']
    lines += [f'{r.name:<{width}}  {r.op_type:<20}  {r.reason}'
              for r in rows]
    return '\n'.join(lines)
