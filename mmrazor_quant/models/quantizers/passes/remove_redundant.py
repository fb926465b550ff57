"""Remove fake quants that re-quantize a tensor already on a grid."""
from typing import Dict, List

from torch import fx, nn

from ..op_kinds import classify_node
from ..rules import QuantRules
from .insert_fake_quants import ACT_FAKE_QUANTS, is_fake_quant_node

__all__ = ['remove_redundant_fake_quants']


def _upstream_fake_quant(node: fx.Node, modules: Dict[str, nn.Module],
                         rules: QuantRules) -> fx.Node:
    """The fake-quant node ``node`` derives from through grid-preserving
    single-input ops only, or None."""
    while True:
        if is_fake_quant_node(node):
            return node
        if classify_node(node, modules) not in rules.grid_preserving:
            return None
        inputs = [a for a in node.args if isinstance(a, fx.Node)]
        if len(inputs) != 1:
            return None
        node = inputs[0]


def _same_scheme(a: nn.Module, b: nn.Module) -> bool:
    return a is b or (type(a) is type(b) and a.qscheme == b.qscheme)


def remove_redundant_fake_quants(root: nn.Module, graphs: Dict[str, fx.Graph],
                                 rules: QuantRules) -> List[str]:
    """Drop a fake quant whose input is another fake quant's output seen
    through grid-preserving ops (max pooling, reshapes, ReLU) with the same
    scheme: the backend keeps the first qparams there, so the second is a
    no-op in the real runtime and would only add an observer of its own.

    Modules no graph uses any more are deleted from ``root.act_fake_quants``.

    Returns:
        list[str]: Names of the removed fake quants.
    """
    container = getattr(root, ACT_FAKE_QUANTS, None)
    if container is None:
        return []
    modules = dict(root.named_modules())
    for graph in graphs.values():
        for node in list(graph.nodes):
            if not is_fake_quant_node(node):
                continue
            src = node.args[0]
            upstream = _upstream_fake_quant(src, modules, rules)
            if upstream is None or upstream is node:
                continue
            if _same_scheme(modules[node.target], modules[upstream.target]):
                node.replace_all_uses_with(src)
                graph.erase_node(node)
        graph.lint()
    used = {
        str(n.target).split('.', 1)[1]
        for g in graphs.values() for n in g.nodes if is_fake_quant_node(n)
    }
    removed = [name for name in list(container.keys()) if name not in used]
    for name in removed:
        del container[name]
    return removed
