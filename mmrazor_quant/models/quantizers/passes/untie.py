"""Untie a layer shared by several BNs into one copy per BN.

RTMDet's separated-BN head (``RTMDetSepBNHead(share_conv=True)``) shares
one conv per stage across the FPN levels and gives each level its own BN:
the same conv object is registered under each level's name
(``cls_convs.1.0.conv is cls_convs.0.0.conv``) and called once per level,
each time followed by that level's BN. ``torch.fx`` records every call under
the first name, so the conv looks followed by several BNs and cannot be
folded into one of them. What a backend executes is one conv per level
with that level's BN folded into it, so each level gets its own copy of the
conv (same weights) under the name it is registered at next to its BN; the
float outputs do not change.
"""
import copy
from collections import defaultdict
from typing import Callable, Dict, List

from torch import fx, nn

__all__ = ['untie_shared_layers']


def _aliases(root: nn.Module) -> Dict[int, List[str]]:
    """Every qualified name of each module object (``id`` → names)."""
    names = defaultdict(list)
    for name, module in root.named_modules(remove_duplicate=False):
        names[id(module)].append(name)
    return names


def _sibling(names: List[str], bn_target: str) -> str:
    """The name in ``names`` whose parent is the BN's parent, or ''."""
    parent = bn_target.rpartition('.')[0]
    for name in names:
        if name.rpartition('.')[0] == parent:
            return name
    return ''


def untie_shared_layers(root: nn.Module, graphs: Dict[str, fx.Graph],
                        follower_of: Callable[[fx.Node], str]) -> List[str]:
    """Give a layer called before different BNs one copy per BN.

    A layer is untied when its calls (over all graphs) are followed by more
    than one BN (``follower_of(node)``: the BN's qualified name, or '' when
    no BN follows) and, for every call, the layer object is also registered
    next to that call's BN (same parent module). Each call is then retargeted
    to that name, and every name but the traced one gets a deep copy of the
    layer in ``root``. Layers that do not qualify are left alone (fusing
    then reports them).

    Args:
        root (nn.Module): The model the graphs were traced from; modified in
            place.
        graphs (dict[str, fx.Graph]): Traced graph per forward mode;
            modified in place.
        follower_of (Callable[[fx.Node], str]): The BN following a layer
            call, '' if none.

    Returns:
        list[str]: The names that got a copy, sorted.
    """
    aliases = _aliases(root)
    calls = defaultdict(list)
    for graph in graphs.values():
        for node in graph.nodes:
            if node.op == 'call_module':
                calls[node.target].append(node)
    untied = []
    for target, nodes in calls.items():
        followers = [follower_of(node) for node in nodes]
        if len(set(followers)) < 2 or not all(followers):
            continue
        layer = root.get_submodule(target)
        names = aliases[id(layer)]
        siblings = [_sibling(names, bn) for bn in followers]
        if not all(siblings):
            continue
        for node, name in zip(nodes, siblings):
            node.target = name
        untied.extend(sorted(set(siblings) - {target}))
    for name in untied:
        parent, _, attr = name.rpartition('.')
        setattr(root.get_submodule(parent), attr,
                copy.deepcopy(root.get_submodule(name)))
    return sorted(untied)
