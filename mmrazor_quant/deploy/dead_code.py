"""Remove what no output of an ONNX graph depends on.

Graph passes that rewire inputs (dropping a ``Clip`` inside a grid,
stripping Q/DQ pairs) leave producers nobody reads: the ``Constant`` nodes
of a dropped ``Clip``'s bounds, a removed pair's scale. onnxruntime turns
``Constant`` nodes into initializers and prints a warning for each unused
one when it loads the model ("Removing initializer ... It is not used by
any node"), so an exported model must carry none.
"""
from typing import Set, Tuple

import onnx

__all__ = ['remove_dead_code']


def _subgraph_reads(node: onnx.NodeProto) -> Set[str]:
    """Names read inside a node's subgraphs (``If``/``Loop`` bodies may use
    tensors of the enclosing graph)."""
    names: Set[str] = set()
    for attr in node.attribute:
        graphs = list(attr.graphs)
        if attr.HasField('g'):
            graphs.append(attr.g)
        for graph in graphs:
            for inner in graph.node:
                names.update(inner.input)
                names |= _subgraph_reads(inner)
    return names


def _reads(graph: onnx.GraphProto) -> Set[str]:
    names = {o.name for o in graph.output}
    for node in graph.node:
        names.update(node.input)
        names |= _subgraph_reads(node)
    return names


def remove_dead_code(model: onnx.ModelProto) -> Tuple[int, int]:
    """Drop nodes none of whose outputs is read (repeatedly, so chains
    feeding only dead nodes go too), then initializers nothing reads.

    ONNX operators have no side effects, so a node whose outputs reach no
    graph output cannot change the model's results.

    Args:
        model (onnx.ModelProto): Modified in place.

    Returns:
        tuple: How many nodes and how many initializers were removed.
    """
    graph = model.graph
    removed_nodes = 0
    while True:
        read = _reads(graph)
        live = [n for n in graph.node if any(o in read for o in n.output)]
        if len(live) == len(graph.node):
            break
        removed_nodes += len(graph.node) - len(live)
        del graph.node[:]
        graph.node.extend(live)
    read = _reads(graph)
    inits = [t for t in graph.initializer if t.name in read]
    removed_inits = len(graph.initializer) - len(inits)
    del graph.initializer[:]
    graph.initializer.extend(inits)
    # Shapes recorded for tensors that no longer exist would be stale.
    produced = {o for n in graph.node for o in n.output}
    infos = [v for v in graph.value_info if v.name in produced]
    del graph.value_info[:]
    graph.value_info.extend(infos)
    return removed_nodes, removed_inits
