"""Graph helpers shared by the PTQ passes: the weighted layers of the
tensor-mode GraphModule, reconstruction units and value capture."""
from typing import Dict, Iterable, List, Optional, Sequence, Tuple

import torch
from torch import Tensor, fx, nn

from mmrazor_quant.models.codebases import block_types_of
from mmrazor_quant.models.fake_quants import BaseFakeQuantize
from mmrazor_quant.models.qat_modules import is_qat_module

__all__ = [
    'owner_modules', 'weighted_nodes', 'find_units', 'extract_unit',
    'capture'
]


def weighted_nodes(gm: fx.GraphModule) -> List[fx.Node]:
    """``call_module`` nodes of QAT conv/linear layers, in graph order,
    each module once."""
    modules = dict(gm.named_modules())
    seen, nodes = set(), []
    for node in gm.graph.nodes:
        if node.op == 'call_module' and is_qat_module(
                modules.get(str(node.target))) and node.target not in seen:
            seen.add(node.target)
            nodes.append(node)
    return nodes


def _is_act_fake_quant(node: fx.Node, modules: Dict[str, nn.Module]) -> bool:
    return node.op == 'call_module' and isinstance(
        modules.get(str(node.target)), BaseFakeQuantize)


def _block_of(target: str, modules: Dict[str, nn.Module],
              block_types: Sequence[str]) -> Optional[str]:
    """The outermost module on ``target``'s path whose class is a block."""
    parts = target.split('.')
    for i in range(1, len(parts)):
        prefix = '.'.join(parts[:i])
        if type(modules.get(prefix)).__name__ in block_types:
            return prefix
    return None


def owner_modules(model: nn.Module) -> Dict[str, nn.Module]:
    """Named modules of the model the graph was traced from (the
    GraphModule's own containers are plain ``nn.Module``s, which hides the
    block classes)."""
    model = getattr(model, 'module', model)
    owner = getattr(model, 'architecture', None)
    if owner is None:
        owner = model
    return dict(owner.named_modules())


def find_units(gm: fx.GraphModule,
               granularity: str = 'block',
               block_types: Optional[Sequence[str]] = None,
               with_input_quant: bool = True,
               modules: Optional[Dict[str, nn.Module]] = None
               ) -> List[Tuple[str, List[fx.Node]]]:
    """Split the weighted part of the graph into reconstruction units.

    ``'layer'``: one unit per QAT conv/linear. ``'block'``: every node from
    the first to the last node called inside a residual block (``add``
    included), one unit per block; layers outside blocks (stem, head) are
    units of their own. With ``with_input_quant``, an activation fake quant
    whose users all lie in the unit joins it (so it can be switched off or
    dropped during reconstruction).

    Args:
        block_types (Sequence[str], optional): Class names of the blocks.
            Defaults to None: those of the codebase adapters of the modules
            (e.g. mmcls's ``BasicBlock``, ``Bottleneck``,
            ``InvertedResidual``; see :func:`block_types_of`).
        modules (dict, optional): Named modules in which to look up block
            classes (see :func:`owner_modules`). Defaults to ``gm``'s.

    Returns:
        list[tuple[str, list[fx.Node]]]: ``(name, nodes in graph order)``.

    Raises:
        ValueError: If ``granularity`` is not ``'layer'`` or ``'block'``.
    """
    if granularity not in ('layer', 'block'):
        raise ValueError(f"granularity must be 'layer' or 'block', got "
                         f'{granularity!r}')
    modules = {**dict(gm.named_modules()), **(modules or {})}
    if block_types is None:
        block_types = block_types_of(modules.values())
    order = {node: i for i, node in enumerate(gm.graph.nodes)}
    units: Dict[str, List[fx.Node]] = {}
    for node in weighted_nodes(gm):
        block = _block_of(str(node.target), modules, block_types) \
            if granularity == 'block' else None
        units.setdefault(block or str(node.target), []).append(node)
    nodes = list(gm.graph.nodes)
    result = []
    for name, members in units.items():
        if name in modules and type(modules[name]).__name__ in block_types \
                and granularity == 'block':
            inside = [
                n for n in nodes if n.op == 'call_module'
                and str(n.target).startswith(name + '.')
            ]
            first, last = order[inside[0]], order[inside[-1]]
            members = [
                n for n in nodes[first:last + 1]
                if n.op not in ('placeholder', 'output')
            ]
        if with_input_quant:
            members = _with_input_fake_quants(members, modules, order)
        result.append((name, members))
    result.sort(key=lambda item: order[item[1][-1]])
    return result


def _with_input_fake_quants(members: List[fx.Node], modules,
                            order) -> List[fx.Node]:
    member_set = set(members)
    extra = []
    for node in members:
        for arg in node.all_input_nodes:
            if arg not in member_set and arg not in extra and \
                    _is_act_fake_quant(arg, modules) and \
                    all(u in member_set for u in arg.users):
                extra.append(arg)
    return sorted(members + extra, key=order.__getitem__)


def extract_unit(gm: fx.GraphModule, members: List[fx.Node]
                 ) -> Tuple[fx.GraphModule, List[fx.Node], List[fx.Node]]:
    """A GraphModule computing ``members`` from the values flowing in.

    Leaf modules are shared with ``gm`` (swapping one in the unit's own
    containers does not touch ``gm``).

    Returns:
        tuple: ``(unit, inputs, outputs)``: the unit takes the values of the
        ``inputs`` nodes of ``gm`` as positional arguments and returns the
        values of the ``outputs`` nodes (a tuple if several).
    """
    member_set = set(members)
    graph = fx.Graph()
    env: Dict[fx.Node, fx.Node] = {}
    inputs: List[fx.Node] = []
    for node in members:
        for arg in node.all_input_nodes:
            if arg not in member_set and arg not in env:
                env[arg] = graph.placeholder(f'in_{len(inputs)}')
                inputs.append(arg)
        env[node] = graph.node_copy(node, env.__getitem__)
    outputs = [
        n for n in members if any(u not in member_set for u in n.users)
    ]
    if not outputs:
        outputs = [members[-1]]
    graph.output(env[outputs[0]] if len(outputs) == 1 else tuple(
        env[n] for n in outputs))
    return fx.GraphModule(gm, graph, 'ReconstructionUnit'), inputs, outputs


class _Captured(Exception):
    """Raised once every wanted value was recorded (stops the run)."""


class _Recorder(fx.Interpreter):

    def __init__(self, gm: fx.GraphModule, wanted: Iterable[fx.Node]):
        super().__init__(gm)
        self.wanted = set(wanted)
        self.found: Dict[fx.Node, Tensor] = {}

    def run_node(self, node: fx.Node):
        out = super().run_node(node)
        if node in self.wanted:
            self.found[node] = out.detach()
            if len(self.found) == len(self.wanted):
                raise _Captured
        return out


@torch.no_grad()
def capture(gm: fx.GraphModule, nodes: Sequence[fx.Node],
            inputs: Tensor, batch_size: int = 64) -> List[Tensor]:
    """The values of ``nodes`` when ``gm`` runs on ``inputs`` (batched; the
    run stops as soon as all are known).

    Returns:
        list[Tensor]: One tensor per node, batches concatenated.
    """
    chunks: List[List[Tensor]] = [[] for _ in nodes]
    for batch in inputs.split(batch_size):
        recorder = _Recorder(gm, nodes)
        try:
            recorder.run(batch)
        except _Captured:
            pass
        for i, node in enumerate(nodes):
            chunks[i].append(recorder.found[node])
    return [torch.cat(c) for c in chunks]
