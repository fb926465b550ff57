"""Insert activation fake quants into the graphs of every forward mode.

All modes share one container of fake-quant modules on the root module, so
the ``tensor``, ``predict`` and ``loss`` graphs call the very same objects
(principle 3 of docs/architecture.md). A fake quant is named after the
tensor it quantizes, from the
module scope of the node that produced it (``nn_module_stack``) and its
ordinal within that scope, which is the same in every mode's graph.
"""
import re
from collections import defaultdict
from typing import Callable, Dict, List, Optional, Tuple

import torch
from torch import fx, nn

from ..op_kinds import OpKind, classify_node
from ..rules import InputSelector, QuantRules

__all__ = [
    'ACT_FAKE_QUANTS', 'insert_activation_fake_quants', 'tensor_keys',
    'is_fake_quant_node'
]

#: Attribute of the root module holding every activation fake quant.
ACT_FAKE_QUANTS = 'act_fake_quants'

#: ``factory(tensor_key, consumer_node, consumer_module_name)`` returns the
#: fake quant for that input, plus a tag naming its qconfig (``'global'`` or
#: the per-layer rule that matched), or ``None`` to keep it float.
FakeQuantFactory = Callable[[str, Optional[fx.Node], Optional[str]],
                            Optional[Tuple[nn.Module, str]]]


def is_fake_quant_node(node: fx.Node) -> bool:
    return node.op == 'call_module' and str(node.target).startswith(
        ACT_FAKE_QUANTS + '.')


def _scope(node: fx.Node) -> str:
    stack = node.meta.get('nn_module_stack')
    return next(reversed(stack)) if stack else ''


def tensor_keys(graph: fx.Graph) -> Dict[fx.Node, str]:
    """A stable, readable key for the tensor each node produces.

    ``call_module`` nodes use the module name; other nodes the innermost
    module scope plus the op name (``backbone.layer1.0.add``). A key seen
    again in the same graph (a module called twice) gets ``_1``, ``_2``...
    """
    keys, seen = {}, defaultdict(int)
    for node in graph.nodes:
        if node.op in ('call_module', 'placeholder'):
            base = str(node.target)
        elif node.op in ('call_function', 'call_method'):
            op = re.sub(r'_\d+$', '', node.name)
            scope = _scope(node)
            base = f'{scope}.{op}' if scope else op
        else:
            continue
        n = seen[base]
        seen[base] += 1
        keys[node] = base if n == 0 else f'{base}_{n}'
    return keys


def _is_conv_like(node: fx.Node, modules: Dict[str, nn.Module]) -> bool:
    # a fake quant inserted into this graph is not in ``modules``
    return not is_fake_quant_node(node) and classify_node(
        node, modules) in (OpKind.CONV, OpKind.LINEAR)


#: Modules that are the identity at inference: the export drops them.
_IDENTITY_MODULES = (nn.Identity, nn.Dropout)
#: Shape ops that return a tuple of tensors: a fake quant goes on an element
#: after them (or on the tensor before them), never on the tuple.
_SEQUENCE_OPS = frozenset({'split', 'split_with_sizes', 'chunk', 'unbind',
                           'tensor_split', 'hsplit', 'vsplit', 'dsplit'})


def _returns_sequence(node: fx.Node) -> bool:
    target = node.target
    name = target if isinstance(target, str) else getattr(
        target, '__name__', '')
    return node.op in ('call_function', 'call_method') and \
        name in _SEQUENCE_OPS


def _sum_fusable(node: fx.Node, modules: Dict[str, nn.Module]) -> bool:
    """Whether ``node`` is a conv/linear output, seen through identity
    modules, that nothing but this path reads: the add can be fused into
    that conv."""
    while node.op == 'call_module' and isinstance(
            modules.get(str(node.target)), _IDENTITY_MODULES) and node.args:
        if len(node.users) != 1:
            return False
        node = node.args[0]
    return len(node.users) == 1 and _is_conv_like(node, modules)


def _tensor_args(node: fx.Node) -> List[fx.Node]:
    if node.target in (torch.cat, torch.concat):
        seq = node.args[0] if node.args else node.kwargs.get('tensors', [])
        return [a for a in seq if isinstance(a, fx.Node)]
    return [a for a in node.args if isinstance(a, fx.Node)]


def _select_inputs(node: fx.Node, selector: str,
                   modules: Dict[str, nn.Module]) -> List[fx.Node]:
    args = _tensor_args(node)
    if not args:
        return []
    if selector == InputSelector.FIRST:
        return args[:1]
    if selector == InputSelector.ALL:
        return args
    if selector == InputSelector.SUM:
        fused = [a for a in args if _sum_fusable(a, modules)]
        return [a for a in args if a is not fused[0]] if fused else args
    # RESIDUAL
    residual = [a for a in args if not _is_conv_like(a, modules)]
    return residual or args[1:]


def _reads_shape_only(node: fx.Node) -> bool:
    """``x.shape``, ``x.size()``, ``x.dim()``: a reader that a fake quant
    above it cannot change (ViT's patch embedding reads the size of the
    image it pads, a flip-test batch built by reshapes included)."""
    if node.op == 'call_function' and node.target is getattr:
        return len(node.args) > 1 and node.args[1] in ('shape', 'ndim')
    return node.op == 'call_method' and node.target in ('size', 'dim')


def _is_scale_shift(node: fx.Node, kind: str) -> bool:
    """An add or mul with a constant operand: one activation input."""
    if kind not in (OpKind.ADD, OpKind.MUL):
        return False
    activations = [a for a in _tensor_args(node) if a.op != 'get_attr']
    return len(activations) == 1 and len(node.args) + len(node.kwargs) == 2


def _fold_activations(node: fx.Node, modules: Dict[str, nn.Module]) -> fx.Node:
    """Walk past single-user activations that a backend fuses into ``node``.
    """
    while len(node.users) == 1:
        user = next(iter(node.users))
        if classify_node(user, modules) != OpKind.ACTIVATION:
            break
        node = user
    return node


class _Inserter:
    """Inserts fake quants into one graph, sharing modules across graphs."""

    def __init__(self, root: nn.Module, container: nn.ModuleDict,
                 names: Dict[str, str], rules: QuantRules,
                 factory: FakeQuantFactory) -> None:
        self.root = root
        self.container = container
        self.names = names  # key@tag -> container entry, shared by graphs
        self.rules = rules
        self.factory = factory

    def _module_name(self, key: str) -> str:
        if key not in self.names:
            name = re.sub(r'[^0-9a-zA-Z_]', '_', key)
            taken = set(self.names.values())
            base, i = name, 1
            while name in taken:
                name, i = f'{base}_{i}', i + 1
            self.names[key] = name
        return self.names[key]

    def _fake_quant_node(self, graph: fx.Graph, src: fx.Node, key: str,
                         consumer: Optional[fx.Node],
                         cache: Dict[Tuple[fx.Node, str], fx.Node]
                         ) -> Optional[fx.Node]:
        consumer_name = None
        if consumer is not None and consumer.op == 'call_module':
            consumer_name = str(consumer.target)
        made = self.factory(key, consumer, consumer_name)
        if made is None:
            return None
        module, tag = made
        full_key = key if tag == 'global' else f'{key}@{tag}'
        if (src, full_key) in cache:
            return cache[(src, full_key)]
        name = self._module_name(full_key)
        if name not in self.container:
            module.name = full_key
            self.container[name] = module
        with graph.inserting_after(src):
            fq = graph.call_module(f'{ACT_FAKE_QUANTS}.{name}', (src, ))
        fq.meta['quantized_tensor'] = full_key
        cache[(src, full_key)] = fq
        return fq

    def run(self, graph: fx.Graph) -> None:
        modules = dict(self.root.named_modules())
        keys = tensor_keys(graph)
        cache: Dict[Tuple[fx.Node, str], fx.Node] = {}
        for node in list(graph.nodes):
            kind = classify_node(node, modules)
            self._quantize_inputs(graph, node, kind, keys, modules, cache)
            self._quantize_output(graph, node, kind, keys, modules, cache)
        graph.lint()

    def _selected(self, node: fx.Node, kind: str,
                  modules: Dict[str, nn.Module]) -> List[fx.Node]:
        """The inputs of ``node`` the rules quantize."""
        selector = self.rules.quantized_inputs.get(kind)
        if selector is None or self.rules.scale_shifts_unquantized and \
                _is_scale_shift(node, kind):
            return []
        return _select_inputs(node, selector, modules)

    def _quantize_inputs(self, graph, node, kind, keys, modules, cache):
        for src in self._selected(node, kind, modules):
            if is_fake_quant_node(src) or src not in keys:
                continue
            top, reader = self._hoisted(src, node, modules, keys)
            if is_fake_quant_node(top):
                continue
            fq = self._fake_quant_node(graph, top, keys[top], node, cache)
            if fq is not None:
                reader.replace_input_with(top, fq)

    def _quantizes(self, user: fx.Node, src: fx.Node,
                   modules: Dict[str, nn.Module]) -> bool:
        if is_fake_quant_node(user):
            return True
        return src in self._selected(user, classify_node(user, modules),
                                     modules)

    def _hoisted(self, src: fx.Node, consumer: fx.Node,
                 modules: Dict[str, nn.Module],
                 keys: Dict[fx.Node, str]) -> Tuple[fx.Node, fx.Node]:
        """Where the fake quant of ``consumer``'s input ``src`` goes:
        ``(tensor, node reading it)``, above the ``quantize_before`` ops
        that only this quantized tensor flows through, and at most up to a
        reshaped tensor that other branches read too."""
        top, reader = src, consumer
        if not all(self._quantizes(u, src, modules) or _reads_shape_only(u)
                   for u in src.users):
            return top, reader
        while classify_node(top, modules) in self.rules.quantize_before:
            # the data input; the others are sizes (``x.view(n, -1)``)
            data = top.args[0] if top.args else None
            if is_fake_quant_node(data):
                return data, top  # hoisted for another reader
            if not isinstance(data, fx.Node) or data not in keys or \
                    _returns_sequence(data):
                break
            shared = len(data.users) > 1
            if shared and classify_node(data, modules) \
                    not in self.rules.quantize_before:
                break
            top, reader = data, top
            if shared:
                # a split (attention's q, k, v): the fake quant goes on the
                # tensor before it, read by this branch; the others read
                # the float tensor unless they quantize it too
                break
        return top, reader

    def _quantize_output(self, graph, node, kind, keys, modules, cache):
        rules = self.rules
        if kind == OpKind.INPUT and rules.quantize_model_input or \
                kind in rules.quantized_outputs:
            end = _fold_activations(node, modules) \
                if rules.fold_activations else node
            self._replace_all_uses(graph, end, keys, node, cache)
        elif kind in rules.share_input_qparams:
            self._share_input_qparams(graph, node)

    def _replace_all_uses(self, graph, end, keys, producer, cache):
        if any(is_fake_quant_node(u) for u in end.users):
            return
        fq = self._fake_quant_node(graph, end, keys[end], producer, cache)
        if fq is not None:
            end.replace_all_uses_with(
                fq, delete_user_cb=lambda user: user is not fq)

    @staticmethod
    def _share_input_qparams(graph, node):
        args = _tensor_args(node)
        if not args or not is_fake_quant_node(args[0]):
            return
        with graph.inserting_after(node):
            fq = graph.call_module(args[0].target, (node, ))
        fq.meta['quantized_tensor'] = args[0].meta.get('quantized_tensor')
        node.replace_all_uses_with(
            fq, delete_user_cb=lambda user: user is not fq)


def insert_activation_fake_quants(root: nn.Module, graphs: Dict[str,
                                                                fx.Graph],
                                  rules: QuantRules,
                                  factory: FakeQuantFactory) -> nn.ModuleDict:
    """Insert activation fake quants into every graph, following ``rules``.

    Args:
        root (nn.Module): The module the graphs were traced from; gets a
            ``act_fake_quants`` ModuleDict holding every fake quant.
        graphs (dict[str, fx.Graph]): Graph per forward mode, edited in
            place.
        rules (QuantRules): The backend's rule table.
        factory (callable): Builds the fake quant for a tensor (see
            ``FakeQuantFactory``).

    Returns:
        nn.ModuleDict: The container of fake quants (``root.act_fake_quants``).
    """
    container = getattr(root, ACT_FAKE_QUANTS, None)
    if container is None:
        container = nn.ModuleDict()
        setattr(root, ACT_FAKE_QUANTS, container)
    for graph in graphs.values():
        owner = graph.owning_module
        # fx checks call_module targets against the graph's owner.
        if owner is not None and owner is not root:
            setattr(owner, ACT_FAKE_QUANTS, container)
    names: Dict[str, str] = {}
    inserter = _Inserter(root, container, names, rules, factory)
    for mode, graph in graphs.items():
        try:
            inserter.run(graph)
        except Exception as e:
            raise RuntimeError(
                f'insert_activation_fake_quants failed on the {mode!r} '
                f'graph: {e}') from e
    return container
