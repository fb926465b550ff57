"""Swap the float convs, transposed convs and linears that are left after
BN fusion for their QAT versions (fake-quantized weights)."""
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
    QATConvTranspose1d,
    QATConvTranspose2d,
    QATConvTranspose3d,
    QATLinear,
    is_swappable_conv_transpose,
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

#: Float class → (QAT class, QAT class with a fused ReLU or None). Exact
#: types, so modules that are already QAT (subclasses) are never swapped
#: twice.
_SWAPS = {
    nn.Conv1d: (QATConv1d, ConvReLU1d),
    nn.Conv2d: (QATConv2d, ConvReLU2d),
    nn.Conv3d: (QATConv3d, ConvReLU3d),
    nn.ConvTranspose1d: (QATConvTranspose1d, None),
    nn.ConvTranspose2d: (QATConvTranspose2d, None),
    nn.ConvTranspose3d: (QATConvTranspose3d, None),
    nn.Linear: (QATLinear, LinearReLU),
}


def _swappable(layer: nn.Module, transposed_convs: bool) -> bool:
    """Whether ``layer`` is a float layer of :data:`_SWAPS` to swap: a
    transposed conv only where the backend quantizes them and without
    groups (see :mod:`~mmrazor_quant.models.qat_modules.conv_transpose`).
    """
    layer_type = plain_layer_type(layer)
    if layer_type not in _SWAPS:
        return False
    if issubclass(layer_type, nn.modules.conv._ConvTransposeNd):
        return transposed_convs and is_swappable_conv_transpose(layer)
    return True


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
                  skip: Callable[[str], bool], fuse_relu: bool,
                  transposed_convs: bool) -> Dict[str, List[fx.Node]]:
    """Per layer name to swap, the ReLU nodes to fuse (empty: no ReLU).

    A ReLU is fused only if every call of the layer, in every graph, is
    followed by one; otherwise the layer is swapped without it.
    """
    relus: Dict[str, List[fx.Node]] = {}
    fusable: Dict[str, bool] = {}
    for graph in graphs.values():
        for node in graph.nodes:
            if node.op != 'call_module' or skip(node.target):
                continue
            layer = node_module(root, node)
            if not _swappable(layer, transposed_convs):
                continue
            with_relu = fuse_relu and \
                _SWAPS[plain_layer_type(layer)][1] is not None
            relu = _relu_after(root, node) if with_relu else None
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
                     fuse_relu: bool = False,
                     transposed_convs: bool = True) -> List[str]:
    """Replace every plain ``nn.Conv{1,2,3}d`` / ``nn.ConvTranspose{1,2,3}d``
    / ``nn.Linear`` called by a ``call_module`` node of any graph by
    ``QATConv{1,2,3}d`` / ``QATConvTranspose{1,2,3}d`` (weights per
    channel on axis 1) / ``QATLinear``.

    Run it after :func:`fuse_conv_bn`: fused modules are QAT already and are
    left alone (only exact float types are swapped). By default a ReLU after
    a conv stays a separate node, so the quantizer decides where activation
    fake quants go; with ``fuse_relu=True`` a layer whose every call (in all
    graphs) feeds only a ReLU becomes ``ConvReLU*d`` / ``LinearReLU`` and the
    ReLU nodes are removed (a shared ``nn.ReLU`` module is never replaced).
    Layers whose calls disagree are swapped without their ReLU; a
    transposed conv always is. A transposed conv with groups keeps its
    float weight.

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
        transposed_convs (bool): Swap transposed convs too (False for a
            backend whose deploy path cannot take their weights on axis
            1). Defaults to True.

    Returns:
        list[str]: Qualified names of the swapped layers, in graph order.

    Raises:
        TypeError: If the factory does not return a BaseFakeQuantize (the
            message names the layer and its node).
    """
    targets = _swap_targets(root, graphs, skip, fuse_relu, transposed_convs)
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
