"""Which ops of a QDQ ONNX model would run in float on a target that
executes int8 only (an NPU whose toolchain takes pre-quantized models)."""
from typing import List, Set

import onnx

__all__ = [
    'float_tensor_producers', 'GRID_KEEPING_OPS', 'FUSED_ACTIVATIONS'
]

#: Ops whose output stays on the grid of their (dequantized) data input.
GRID_KEEPING_OPS = frozenset({
    'Relu', 'MaxPool', 'Reshape', 'Flatten', 'Transpose', 'Squeeze',
    'Unsqueeze', 'Identity', 'Dropout'
})
#: Ops whose output is a shape or an index, never an activation.
_SHAPE_SOURCES = frozenset({'Shape', 'Size', 'Constant', 'ConstantOfShape'})
_QDQ = frozenset({'QuantizeLinear', 'DequantizeLinear'})
#: Activations a target fuses into the op before them when their output is
#: quantized right away (Conv+ReLU6 is one int8 op).
FUSED_ACTIVATIONS = frozenset({'Relu', 'Clip', 'LeakyRelu'})
#: Ops whose float output an ``Add`` reading it alone takes in (a residual
#: add fused into the conv, e.g. rknn-toolkit2's ``ConvAdd``).
_SUM_FUSABLE = frozenset({'Conv', 'Gemm'})


def float_tensor_producers(model: onnx.ModelProto) -> List[onnx.NodeProto]:
    """The nodes whose float output reaches an op or a graph output without
    a QuantizeLinear/DequantizeLinear pair in between (in graph order).

    A tensor is on an integer grid when a ``DequantizeLinear`` produces it
    or a grid-keeping op (:data:`GRID_KEEPING_OPS`) does from one; constants
    and shape computations are neither activations nor checked; an
    activation in :data:`FUSED_ACTIVATIONS` read only by ``QuantizeLinear``
    counts as part of the op before it, and so does a conv/linear output
    that only an ``Add`` reads (the add is fused into it). A graph input
    read by anything but ``QuantizeLinear`` counts too (its "producer" is
    then reported as a node of op type ``'input'``).
    """
    graph = model.graph
    constant: Set[str] = {i.name for i in graph.initializer}
    on_grid: Set[str] = set()
    producer = {}
    for node in graph.node:
        data = [i for i in node.input if i]
        if node.op_type in _SHAPE_SOURCES or (data and all(
                i in constant for i in data)):
            constant.update(node.output)
        elif node.op_type == 'DequantizeLinear' or (
                node.op_type in GRID_KEEPING_OPS and data[0] in on_grid):
            on_grid.update(node.output)
        for out in node.output:
            producer[out] = node
    for inp in graph.input:
        if inp.name not in constant:
            producer[inp.name] = onnx.helper.make_node(
                'input', [], [inp.name], name=inp.name)
    consumers = {}
    for node in graph.node:
        for name in node.input:
            consumers.setdefault(name, []).append(node)

    def fused(node: onnx.NodeProto) -> bool:
        return node.op_type in FUSED_ACTIVATIONS and all(
            c.op_type == 'QuantizeLinear'
            for c in consumers.get(node.output[0], []))

    bad, seen = [], set()

    def sum_fused(name: str, reader: onnx.NodeProto) -> bool:
        src = producer.get(name)
        return reader.op_type == 'Add' and src is not None and \
            src.op_type in _SUM_FUSABLE and len(consumers[name]) == 1

    def flag(name: str) -> None:
        if name in constant or name in on_grid or name in seen:
            return
        seen.add(name)
        bad.append(producer[name])

    for node in graph.node:
        # Q/DQ read float and int8 by design.
        if node.op_type in _QDQ or node.output[0] in constant or fused(node):
            continue
        for name in node.input:
            if name and not sum_fused(name, node):
                flag(name)
    for out in graph.output:
        flag(out.name)
    return bad
