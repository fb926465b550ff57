"""Fuse ``Conv → BN [→ ReLU]`` (and ``Linear → BN1d [→ ReLU]``) into QAT
modules, in the model and in every traced graph of it. ``SyncBatchNorm`` is
folded as the plain BN (QAT then computes per-process batch statistics, as
MMRazor, which converts it to ``BatchNorm2d`` before tracing).

The graphs are traced from the same root for several forward modes
(``tensor`` / ``predict`` / ``loss``) and refer to its submodules by
qualified name, so replacing a module in the root updates all of them at
once; only the BN / ReLU nodes have to be removed from each graph.
"""
from collections import defaultdict
from typing import Callable, Dict, List, NoReturn, Optional, Tuple

import torch
import torch.nn.functional as F
from torch import fx, nn

from mmrazor_quant.models.fake_quants.base import BaseFakeQuantize
from mmrazor_quant.models.qat_modules import (
    ConvBn2d,
    ConvBnReLU2d,
    LinearBn1d,
    LinearBnReLU1d,
)
from mmrazor_quant.models.task_modules.tracer.layer_types import (
    plain_layer_type,
)
from .untie import untie_shared_layers

__all__ = [
    'fuse_conv_bn', 'is_relu_node', 'replace_submodule', 'node_module',
    'build_weight_fake_quant', 'raise_with_node', 'WeightFakeQuantFactory'
]

#: ``factory(qualified_name, float_module)`` → the module's weight fake quant.
WeightFakeQuantFactory = Callable[[str, nn.Module], BaseFakeQuantize]

#: (float layer, BN) → (fused class, fused class with ReLU). Exact types:
#: subclasses (already-QAT modules, padding variants) are not fused.
_FUSIONS: Dict[Tuple[type, type], Tuple[type, type]] = {
    (nn.Conv2d, nn.BatchNorm2d): (ConvBn2d, ConvBnReLU2d),
    (nn.Linear, nn.BatchNorm1d): (LinearBn1d, LinearBnReLU1d),
}
_LAYER_TYPES = {layer for layer, _ in _FUSIONS}
#: torch's ``SyncBatchNorm`` (mmseg's and mmpose's configs use it) computes,
#: outside distributed training, what the plain BN of the layer's fusion
#: computes: folded as that plain BN.
_SYNC_BN_TYPES = (nn.SyncBatchNorm, )

_RELU_FUNCTIONS = (F.relu, F.relu_, torch.relu, torch.relu_)
_RELU_METHODS = ('relu', 'relu_')

# One link of a chain in one graph: (conv node, BN node, ReLU node or None).
_Chain = Tuple[fx.Node, fx.Node, Optional[fx.Node]]


def raise_with_node(e: Exception, message: str, node: fx.Node) -> NoReturn:
    """Re-raise ``e`` (same type where possible) with ``message`` and the
    node, chained ``from e``."""
    text = f'{message}\n  node: {node.format_node()}\n  cause: {e}'
    try:
        new = type(e)(text)
    except Exception:  # exception types with other constructors
        new = RuntimeError(text)
    raise new from e


def node_module(root: nn.Module, node: fx.Node) -> nn.Module:
    """The submodule a ``call_module`` node calls.

    Raises:
        AttributeError: If ``root`` has no such submodule (the graph was not
            traced from ``root``).
    """
    try:
        return root.get_submodule(node.target)
    except AttributeError as e:
        raise_with_node(
            e, f'graph node calls {node.target!r}, which is not a submodule '
            'of the root module; was the graph traced from this root?', node)


def replace_submodule(root: nn.Module, name: str, module: nn.Module) -> None:
    """``setattr`` ``module`` at qualified ``name`` on its parent."""
    parent_name, _, attr = name.rpartition('.')
    parent = root.get_submodule(parent_name) if parent_name else root
    setattr(parent, attr, module)


def is_relu_node(root: nn.Module, node: fx.Node) -> bool:
    """Whether ``node`` is a plain ReLU: an ``nn.ReLU`` module call,
    ``F.relu`` / ``torch.relu`` (or in-place forms), or ``x.relu()``."""
    if node.op == 'call_module':
        return type(node_module(root, node)) is nn.ReLU
    if node.op == 'call_function':
        return node.target in _RELU_FUNCTIONS
    if node.op == 'call_method':
        return node.target in _RELU_METHODS
    return False


def _sole_user(node: fx.Node) -> Optional[fx.Node]:
    """The only user of ``node`` if it takes ``node`` as its only tensor
    input (first positional argument), else None."""
    if len(node.users) != 1:
        return None
    user = next(iter(node.users))
    if not user.args or user.args[0] is not node or \
            node in user.args[1:] or node in user.kwargs.values():
        return None
    return user


def _match_chain(root: nn.Module, conv_node: fx.Node,
                 fuse_relu: bool) -> Optional[_Chain]:
    """The ``conv → BN [→ ReLU]`` chain starting at ``conv_node``, if any."""
    bn_node = _sole_user(conv_node)
    if bn_node is None or bn_node.op != 'call_module' or \
            len(bn_node.args) != 1 or bn_node.kwargs:
        return None
    key = _fusion_key(node_module(root, conv_node),
                      node_module(root, bn_node))
    if key not in _FUSIONS:
        return None
    relu_node = _sole_user(bn_node) if fuse_relu else None
    if relu_node is not None and not is_relu_node(root, relu_node):
        relu_node = None
    return conv_node, bn_node, relu_node


def _fusion_key(layer: nn.Module, bn: nn.Module) -> Tuple[type, type]:
    """The :data:`_FUSIONS` key of ``layer → bn``; a synchronized BN counts
    as the layer's plain BN."""
    layer_type = plain_layer_type(layer)
    if type(bn) in _SYNC_BN_TYPES:
        for (fused_layer, plain_bn) in _FUSIONS:
            if fused_layer is layer_type:
                return layer_type, plain_bn
    return layer_type, type(bn)


def _as_plain_bn(bn: nn.Module, plain_cls: type) -> nn.Module:
    """``bn`` itself, or for a synchronized BN a ``plain_cls`` sharing its
    parameters and buffers (same state-dict keys and values)."""
    if type(bn) is plain_cls:
        return bn
    plain = plain_cls(bn.num_features, bn.eps, bn.momentum, bn.affine,
                      bn.track_running_stats)
    for name, param in bn.named_parameters(recurse=False):
        setattr(plain, name, param)
    for name, buf in bn.named_buffers(recurse=False):
        setattr(plain, name, buf)
    return plain.train(bn.training)


def build_weight_fake_quant(factory: WeightFakeQuantFactory, name: str,
                            layer: nn.Module) -> BaseFakeQuantize:
    """Call ``factory(name, layer)``, check the result and name it
    ``'<name> (weight)'`` unless the factory named it.

    Raises:
        TypeError: If the factory does not return a BaseFakeQuantize.
    """
    weight_fake_quant = factory(name, layer)
    if not isinstance(weight_fake_quant, BaseFakeQuantize):
        raise TypeError('weight_fake_quant_factory must return a '
                        f'BaseFakeQuantize, got '
                        f'{type(weight_fake_quant).__name__}')
    if weight_fake_quant.name == type(weight_fake_quant).__name__:
        weight_fake_quant.name = f'{name} (weight)'
    return weight_fake_quant


def _describe(chain: Optional[_Chain]) -> str:
    if chain is None:
        return 'no fusable BN'
    _, bn_node, relu_node = chain
    relu = ' → ReLU' if relu_node is not None else ''
    return f'BN {bn_node.target!r}{relu}'


def _signature(chain: Optional[_Chain]) -> Tuple[Optional[str], bool]:
    if chain is None:
        return None, False
    return chain[1].target, chain[2] is not None


def _follower(root: nn.Module, node: fx.Node, fuse_relu: bool,
              skip: Callable[[str], bool]) -> str:
    """The BN a fusable layer call feeds, '' if none."""
    if skip(node.target) or \
            plain_layer_type(node_module(root, node)) not in _LAYER_TYPES:
        return ''
    chain = _match_chain(root, node, fuse_relu)
    return chain[1].target if chain is not None else ''


def _collect_chains(
        root: nn.Module, graphs: Dict[str, fx.Graph], fuse_relu: bool,
        skip: Callable[[str], bool]
) -> Dict[str, List[Tuple[str, Optional[_Chain]]]]:
    """Per layer name, the ``(mode, chain or None)`` of each of its calls."""
    calls = defaultdict(list)
    for mode, graph in graphs.items():
        for node in graph.nodes:
            if node.op != 'call_module' or skip(node.target):
                continue
            if plain_layer_type(node_module(root, node)) not in _LAYER_TYPES:
                continue
            calls[node.target].append(
                (mode, _match_chain(root, node, fuse_relu)))
    return calls


def _check_consistent(name: str,
                      calls: List[Tuple[str, Optional[_Chain]]]) -> bool:
    """Whether ``name`` is fused: all its calls, in all modes, match the
    same chain (True) or none does (False).

    Raises:
        ValueError: If the calls disagree.
    """
    first_mode, first = calls[0]
    for mode, chain in calls[1:]:
        if _signature(chain) != _signature(first):
            node = (chain or first)[0]
            raise ValueError(
                f'fuse_conv_bn: module {name!r} is followed by '
                f'{_describe(first)} in mode {first_mode!r} but by '
                f'{_describe(chain)} in mode {mode!r}; the graphs of all '
                'forward modes must use it the same way (skip the module or '
                f'make the modes agree)\n  node: {node.format_node()}')
    return first is not None


def _check_bn_not_shared(graphs: Dict[str, fx.Graph],
                         chains: List[Tuple[str, _Chain]]) -> None:
    """Every call of a fused BN module must be inside a fused chain, since
    the module is replaced by ``nn.Identity``.

    Raises:
        ValueError: If a fused BN is also called elsewhere or follows
            several layers.
    """
    owners = defaultdict(set)
    for name, chain in chains:
        owners[chain[1].target].add(name)
    for target, names in owners.items():
        if len(names) > 1:
            raise ValueError(
                f'fuse_conv_bn: BN module {target!r} follows several layers '
                f'({sorted(names)}) and cannot be folded into each of them')
    fused = {chain[1] for _, chain in chains}
    for mode, graph in graphs.items():
        for node in graph.nodes:
            if node.op == 'call_module' and node.target in owners and \
                    node not in fused:
                raise ValueError(
                    f'fuse_conv_bn: BN module {node.target!r} is also called '
                    f'outside its conv → BN chain in mode {mode!r}, so it '
                    'cannot be folded into the conv\n'
                    f'  node: {node.format_node()}')


def _build_fused(root: nn.Module, name: str, chain: _Chain,
                 factory: WeightFakeQuantFactory) -> nn.Module:
    """The fused QAT module of one chain; ``root`` is not modified."""
    conv_node, bn_node, relu_node = chain
    layer = node_module(root, conv_node)
    bn = node_module(root, bn_node)
    key = _fusion_key(layer, bn)
    plain_cls, relu_cls = _FUSIONS[key]
    fused_cls = plain_cls if relu_node is None else relu_cls
    try:
        weight_fake_quant = build_weight_fake_quant(factory, name, layer)
        return fused_cls.from_float(layer, _as_plain_bn(bn, key[1]),
                                    weight_fake_quant)
    except Exception as e:
        raise_with_node(
            e, f'fuse_conv_bn: cannot fuse {name!r} with BN '
            f'{bn_node.target!r} into {fused_cls.__name__}', conv_node)


def _rewire(chain: _Chain) -> None:
    """Drop the BN (and ReLU) nodes; their users read the conv node."""
    conv_node, bn_node, relu_node = chain
    for node in (relu_node, bn_node):
        if node is not None:
            node.replace_all_uses_with(conv_node)
            node.graph.erase_node(node)


def fuse_conv_bn(root: nn.Module,
                 graphs: Dict[str, fx.Graph],
                 weight_fake_quant_factory: WeightFakeQuantFactory,
                 fuse_relu: bool = True,
                 skip: Callable[[str], bool] = lambda name: False
                 ) -> List[str]:
    """Fuse ``Conv2d → BatchNorm2d [→ ReLU]`` and ``Linear → BatchNorm1d
    [→ ReLU]`` call chains into QAT modules (:class:`ConvBn2d`,
    :class:`ConvBnReLU2d`, :class:`LinearBn1d`, :class:`LinearBnReLU1d`).

    A chain is fused when the layer's output is used only by the BN and, for
    the ReLU, the BN's output only by the ReLU (an ``nn.ReLU`` call, even of
    a module shared with other places, ``F.relu``, ``torch.relu`` or
    ``x.relu()``). In ``root`` the layer is replaced at its name by the fused
    module (which owns the BN) and the BN by ``nn.Identity``, so state-dict
    keys are not duplicated; a ReLU module is never replaced. In every graph
    the BN and ReLU nodes are removed and their users rewired to the layer
    node. A layer shared by several BNs and registered next to each (RTMDet's
    shared head convs) is first untied into one copy per BN
    (:func:`~.untie.untie_shared_layers`), which keeps the float outputs.
    Otherwise nothing is changed if an error is raised.

    Args:
        root (nn.Module): The float model the graphs were traced from;
            modified in place.
        graphs (dict[str, fx.Graph]): Traced graph per forward mode;
            modified in place and linted.
        weight_fake_quant_factory (Callable[[str, nn.Module],
            BaseFakeQuantize]): Builds the fake quant of a layer's (folded)
            weight from its qualified name and float module. A fake quant
            without a name gets ``'<name> (weight)'``.
        fuse_relu (bool): Also fuse a ReLU after the BN. Defaults to True.
        skip (Callable[[str], bool]): Layer names not to fuse. Defaults to
            skipping none.

    Returns:
        list[str]: Qualified names of the fused layers, in graph order.

    Raises:
        ValueError: If a layer is fused in one mode's graph but not (or with
            another BN / ReLU) in another, if a fused BN is also called
            elsewhere, or if a BN cannot be folded (no running statistics).
    """
    untie_shared_layers(
        root, graphs, lambda node: _follower(root, node, fuse_relu, skip))
    calls = _collect_chains(root, graphs, fuse_relu, skip)
    names = [name for name, layer_calls in calls.items()
             if _check_consistent(name, layer_calls)]
    chains = [(name, chain) for name in names for _, chain in calls[name]]
    _check_bn_not_shared(graphs, chains)
    # Build everything before touching the root, so a failure leaves the
    # model and graphs as they were.
    fused = {
        name: _build_fused(root, name, calls[name][0][1],
                           weight_fake_quant_factory)
        for name in names
    }
    for name, module in fused.items():
        replace_submodule(root, name, module)
        # The BN now lives inside the fused module; an Identity keeps the
        # attribute (for code that reads it) without duplicate state.
        replace_submodule(root, calls[name][0][1][1].target, nn.Identity())
    for _, chain in chains:
        _rewire(chain)
    for graph in graphs.values():
        graph.lint()
    return names
