"""Remove the activation fake quants a config names as redundant: MMRazor's
``extra_redundant_fakequants``.

Eight keys, ``extra_{module,function,method,op}_{prev,next}_wo_fakequant``,
each a tuple of targets:

* ``module``: module classes (or dotted class paths), matched with
  ``isinstance`` against ``call_module`` nodes;
* ``function``: functions (or dotted paths, e.g. ``'torch.flatten'``) of
  ``call_function`` nodes;
* ``method``: method names (e.g. ``'flatten'``) of ``call_method`` nodes;
* ``op``: node kinds (``'output'``, ``'placeholder'``, ...).

``next`` removes a fake quant whose input is a matching node. ``prev``
removes, on each input of a matching node, the nearest fake quant upstream
(for modules: only one that is the node's first input), as MMRazor did,
but reached through grid-keeping ops only (reshapes, max pooling, ReLU):
MMRazor walked through any op, so ``('output', )`` could strip the input
quantization of the last linear layer under an input-quantizing backend.
All forward modes share their fake quants, so a fake quant removed in one
mode's graph is removed from every graph.
"""
from typing import Any, Callable, Dict, List, Set, Tuple

from mmengine.utils import import_modules_from_strings
from torch import fx, nn

from ..op_kinds import classify_node
from ..rules import QuantRules
from .insert_fake_quants import ACT_FAKE_QUANTS, is_fake_quant_node

__all__ = [
    'REDUNDANT_KEYS', 'check_redundant_spec', 'remove_requested_fake_quants'
]

_KINDS = ('module', 'function', 'method', 'op')
#: The keys of ``extra_redundant_fakequants``.
REDUNDANT_KEYS = tuple(f'extra_{kind}_{side}_wo_fakequant'
                       for kind in _KINDS for side in ('prev', 'next'))


def _import(path: Any, key: str) -> Any:
    """The object a dotted path names (objects pass through)."""
    if not isinstance(path, str):
        return path
    module, _, attr = path.rpartition('.')
    if not module:
        raise ValueError(f'extra_redundant_fakequants.{key}: {path!r} is not '
                         "a dotted path such as 'torch.nn.ReLU6'")
    try:
        return getattr(import_modules_from_strings(module), attr)
    except (ImportError, AttributeError) as e:
        raise ValueError(f'extra_redundant_fakequants.{key}: cannot import '
                         f'{path!r} ({e})') from e


def check_redundant_spec(spec: Any) -> Dict[str, Tuple[Any, ...]]:
    """Validate ``extra_redundant_fakequants``; resolve dotted paths.

    Raises:
        KeyError: If a key is not one of :data:`REDUNDANT_KEYS`.
        TypeError, ValueError: If an entry has the wrong kind.
    """
    spec = dict(spec or {})
    unknown = sorted(set(spec) - set(REDUNDANT_KEYS))
    if unknown:
        raise KeyError(f'extra_redundant_fakequants has unknown keys '
                       f'{unknown}; allowed: {list(REDUNDANT_KEYS)}')
    out = {}
    for key, entries in spec.items():
        if isinstance(entries, (str, type)) or callable(entries):
            entries = (entries, )
        kind = key.split('_')[1]
        if kind in ('module', 'function'):
            entries = tuple(_import(e, key) for e in entries)
        bad = [e for e in entries if
               (kind == 'module' and not isinstance(e, type)) or
               (kind == 'function' and not callable(e)) or
               (kind in ('method', 'op') and not isinstance(e, str))]
        if bad:
            what = dict(module='module classes', function='functions',
                        method='method names', op='node ops')[kind]
            raise TypeError(f'extra_redundant_fakequants.{key} must hold '
                            f'{what}, got {bad}')
        out[key] = tuple(entries)
    return out


def _matcher(kind: str, targets: Tuple[Any, ...],
             modules: Dict[str, nn.Module]) -> Callable[[fx.Node], bool]:
    if kind == 'module':
        return lambda n: n.op == 'call_module' and isinstance(
            modules.get(str(n.target)), targets)
    if kind == 'function':
        return lambda n: n.op == 'call_function' and n.target in targets
    if kind == 'method':
        return lambda n: n.op == 'call_method' and n.target in targets
    return lambda n: n.op in targets


def _nearest_upstream(inputs: List[fx.Node], modules: Dict[str, nn.Module],
                      rules: QuantRules) -> List[fx.Node]:
    """On each path up from ``inputs``, the first fake-quant node, reached
    through ops that keep the grid (reshapes, max pooling, ReLU) only: a
    backend may quantize a tensor before a flatten or a pooling."""
    found, todo, seen = [], list(inputs), set()
    while todo:
        cur = todo.pop()
        if cur in seen:
            continue
        seen.add(cur)
        if is_fake_quant_node(cur):
            found.append(cur)
        elif classify_node(cur, modules) in rules.grid_preserving:
            todo.extend(cur.all_input_nodes)
    return found


def _requested(graph: fx.Graph, spec: Dict[str, Tuple[Any, ...]],
               modules: Dict[str, nn.Module], rules: QuantRules) -> Set[str]:
    """Targets of the fake quants ``spec`` asks to remove in ``graph``."""
    targets = set()
    for key, entries in spec.items():
        if not entries:
            continue
        _, kind, side = key.split('_')[:3]
        matches = _matcher(kind, entries, modules)
        for node in graph.nodes:
            if side == 'next' and is_fake_quant_node(node) and \
                    matches(node.args[0]):
                targets.add(str(node.target))
            elif side == 'prev' and matches(node):
                # a module's data input only; every input of an op
                first = node.args[0] if node.args else None
                inputs = node.all_input_nodes if kind != 'module' else \
                    [first] if isinstance(first, fx.Node) else []
                found = _nearest_upstream(inputs, modules, rules)
                targets.update(str(n.target) for n in found)
    return targets


def remove_requested_fake_quants(root: nn.Module, graphs: Dict[str, fx.Graph],
                                 spec: Dict[str, Tuple[Any, ...]],
                                 rules: QuantRules) -> List[str]:
    """Remove the fake quants ``spec`` (see :func:`check_redundant_spec`)
    names, from every graph and from ``root.act_fake_quants``.

    Args:
        root (nn.Module): The quantized model.
        graphs (dict[str, fx.Graph]): Graph per forward mode.
        spec (dict): The checked ``extra_redundant_fakequants``.
        rules (QuantRules): The backend's rules (which ops keep the grid).

    Returns:
        list[str]: The names of the removed fake quants, sorted.
    """
    container = getattr(root, ACT_FAKE_QUANTS, None)
    if container is None or not any(spec.values()):
        return []
    modules = dict(root.named_modules())
    targets = set()
    for graph in graphs.values():
        targets |= _requested(graph, spec, modules, rules)
    for graph in graphs.values():
        for node in list(graph.nodes):
            if node.op == 'call_module' and str(node.target) in targets:
                node.replace_all_uses_with(node.args[0])
                graph.erase_node(node)
        graph.lint()
    removed = sorted(t.split('.', 1)[1] for t in targets)
    for name in removed:
        del container[name]
    return removed
