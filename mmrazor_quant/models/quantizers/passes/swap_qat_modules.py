"""Swap the float convs / linears that are left after BN fusion for their
QAT versions (fake-quantized weights)."""
from typing import Callable, Dict, List, Optional

from torch import fx, nn

from mmrazor_quant.models.qat_modules import (
    ConvReLU1d,
    ConvReLU2d,
    ConvReLU3d,
    LinearReLU,
    QATConv1d,
    QATConv2d,
    QATConv3d,
    QATLinear,
)
from mmrazor_quant.models.task_modules.tracer.layer_types import (
    plain_layer_type,
)
from .fuse import (
    WeightFakeQuantFactory,
    build_weight_fake_quant,
    is_relu_node,
    node_module,
    raise_with_node,
    replace_submodule,
)

__all__ = ['swap_qat_modules']

#: Float class → (QAT class, QAT class with a fused ReLU). Exact types, so
#: modules that are already QAT (subclasses) are never swapped twice.
_SWAPS = {
    nn.Conv1d: (QATConv1d, ConvReLU1d),
    nn.Conv2d: (QATConv2d, ConvReLU2d),
    nn.Conv3d: (QATConv3d, ConvReLU3d),
    nn.Linear: (QATLinear, LinearReLU),
}


def _relu_after(root: nn.Module, node: fx.Node) -> Optional[fx.Node]:
    """The ReLU node that is the only user of ``node``, if any."""
    if len(node.users) != 1:
        return None
    user = next(iter(node.users))
    if user.args and user.args[0] is node and is_relu_node(root, user) and \
            node not in user.args[1:] and node not in user.kwargs.values():
        return user
    return None


def _swap_targets(root: nn.Module, graphs: Dict[str, fx.Graph],
                  skip: Callable[[str], bool],
                  fuse_relu: bool) -> Dict[str, List[fx.Node]]:
    """Per layer name to swap, the ReLU nodes to fuse (empty: no ReLU).

    A ReLU is fused only if every call of the layer, in every graph, is
    followed by one; otherwise the layer is swapped without it.
    """
    relus: Dict[str, List[fx.Node]] = {}
    fusable: Dict[str, bool] = {}
    for graph in graphs.values():
        for node in graph.nodes:
            if node.op != 'call_module' or skip(node.target) or \
                    plain_layer_type(node_module(root, node)) not in _SWAPS:
                continue
            relu = _relu_after(root, node) if fuse_relu else None
            relus.setdefault(node.target, [])
            fusable[node.target] = fusable.get(node.target, True) and \
                relu is not None
            if relu is not None:
                relus[node.target].append(relu)
    return {
        name: nodes if fusable[name] else []
        for name, nodes in relus.items()
    }


def swap_qat_modules(root: nn.Module,
                     graphs: Dict[str, fx.Graph],
                     weight_fake_quant_factory: WeightFakeQuantFactory,
                     skip: Callable[[str], bool] = lambda name: False,
                     fuse_relu: bool = False) -> List[str]:
    """Replace every plain ``nn.Conv{1,2,3}d`` / ``nn.Linear`` called by a
    ``call_module`` node of any graph by ``QATConv{1,2,3}d`` /
    ``QATLinear``.

    Run it after :func:`fuse_conv_bn`: fused modules are QAT already and are
    left alone (only exact float types are swapped). By default a ReLU after
    a conv stays a separate node, so the quantizer decides where activation
    fake quants go; with ``fuse_relu=True`` a layer whose every call (in all
    graphs) feeds only a ReLU becomes ``ConvReLU*d`` / ``LinearReLU`` and the
    ReLU nodes are removed (a shared ``nn.ReLU`` module is never replaced).
    Layers whose calls disagree are swapped without their ReLU.

    Args:
        root (nn.Module): The model the graphs were traced from; modified
            in place.
        graphs (dict[str, fx.Graph]): Traced graph per forward mode;
            modified in place (with ``fuse_relu``) and linted.
        weight_fake_quant_factory (Callable[[str, nn.Module],
            BaseFakeQuantize]): Builds a layer's weight fake quant from its
            qualified name and float module. A fake quant without a name
            gets ``'<name> (weight)'``.
        skip (Callable[[str], bool]): Layer names to keep in float.
            Defaults to skipping none.
        fuse_relu (bool): Fuse a following ReLU. Defaults to False.

    Returns:
        list[str]: Qualified names of the swapped layers, in graph order.

    Raises:
        TypeError: If the factory does not return a BaseFakeQuantize (the
            message names the layer and its node).
    """
    targets = _swap_targets(root, graphs, skip, fuse_relu)
    nodes = {node.target: node for graph in graphs.values()
             for node in graph.nodes if node.op == 'call_module'}
    swapped = {}
    for name, relu_nodes in targets.items():
        layer = root.get_submodule(name)
        plain_cls, relu_cls = _SWAPS[plain_layer_type(layer)]
        qat_cls = relu_cls if relu_nodes else plain_cls
        try:
            weight_fake_quant = build_weight_fake_quant(
                weight_fake_quant_factory, name, layer)
            swapped[name] = qat_cls.from_float(layer, weight_fake_quant)
        except Exception as e:
            raise_with_node(
                e, f'swap_qat_modules: cannot swap {name!r} for '
                f'{qat_cls.__name__}', nodes[name])
    # Only modify root and graphs once every module was built.
    for name, module in swapped.items():
        replace_submodule(root, name, module)
        for relu in targets[name]:
            relu.replace_all_uses_with(relu.args[0])
            relu.graph.erase_node(relu)
    for graph in graphs.values():
        graph.lint()
    return list(swapped)
