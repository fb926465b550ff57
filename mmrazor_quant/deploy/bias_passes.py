"""Keep the float bias of low-bit conv/linear layers float in onnxruntime.

onnxruntime's basic graph optimizations quantize the bias of every
``Conv``/``Gemm`` whose data and weight come from ``DequantizeLinear`` to
int32 on the grid ``s_in * s_w`` (what its int8 kernels take). The
simulation keeps the bias float. At 8 bits the step ``s_in * s_w`` is tiny;
at 4 bits it is coarse enough that the rounded bias flips the following
4-bit quantization on a few percent of the outputs. onnxruntime has no
4-bit conv kernel, so moving the bias into an ``Add`` after the op costs
nothing and keeps the runtime on the simulation.
"""
from typing import Dict

import numpy as np
import onnx
from onnx import helper, numpy_helper

__all__ = ['unfuse_low_bit_bias', 'LOW_BIT_TYPES']

#: Containers without integer kernels in onnxruntime's CPU provider.
LOW_BIT_TYPES = (onnx.TensorProto.INT4, onnx.TensorProto.UINT4)


def _low_bit_tensors(graph: onnx.GraphProto) -> set:
    """Outputs of ``DequantizeLinear`` nodes reading a 4-bit tensor."""
    types: Dict[str, int] = {
        t.name: t.data_type for t in graph.initializer}
    for node in graph.node:
        if node.op_type == 'QuantizeLinear':
            dtype = next((a.i for a in node.attribute
                          if a.name == 'output_dtype'), 0)
            if len(node.input) > 2 and node.input[2] in types:
                dtype = types[node.input[2]]
            types[node.output[0]] = dtype
    return {
        n.output[0] for n in graph.node
        if n.op_type == 'DequantizeLinear'
        and types.get(n.input[0]) in LOW_BIT_TYPES
    }


def _bias_shape(node: onnx.NodeProto, bias: np.ndarray) -> np.ndarray:
    # Conv outputs are (N, C, spatial...): broadcast the bias over C.
    if node.op_type == 'Conv':
        return bias.reshape(1, -1, *([1] * 2))
    return bias


def _movable(node: onnx.NodeProto, low_bit: set,
             inits: Dict[str, onnx.TensorProto]) -> bool:
    if node.op_type not in ('Conv', 'Gemm') or len(node.input) < 3:
        return False
    if node.input[0] not in low_bit or node.input[2] not in inits:
        return False
    beta = next((a.f for a in node.attribute if a.name == 'beta'), 1.0)
    return beta == 1.0


def unfuse_low_bit_bias(model: onnx.ModelProto) -> int:
    """Move the float bias of each ``Conv``/``Gemm`` with a 4-bit quantized
    input into an ``Add`` after it.

    Conv biases are reshaped to ``(1, C, 1, 1)`` (2-d convs only; other
    ranks are left alone).

    Args:
        model (onnx.ModelProto): A QDQ model, modified in place.

    Returns:
        int: How many biases were moved.
    """
    graph = model.graph
    inits = {t.name: t for t in graph.initializer}
    low_bit = _low_bit_tensors(graph)
    shapes = {}
    nodes, moved = [], 0
    for node in graph.node:
        node = onnx.NodeProto.FromString(node.SerializeToString())
        nodes.append(node)
        if not _movable(node, low_bit, inits):
            continue
        kernel = next((a.ints for a in node.attribute
                       if a.name == 'kernel_shape'), None)
        if node.op_type == 'Conv' and kernel is not None and len(kernel) != 2:
            continue
        bias = numpy_helper.to_array(inits[node.input[2]])
        name = f'{node.input[2]}_unfused'
        if name not in shapes:
            shapes[name] = numpy_helper.from_array(
                _bias_shape(node, bias), name)
            graph.initializer.append(shapes[name])
        output = node.output[0]
        node.output[0] = f'{output}_without_bias'
        del node.input[2]
        nodes.append(
            helper.make_node('Add', [node.output[0], name], [output],
                             name=f'{output}_bias_add'))
        moved += 1
    del graph.node[:]
    graph.node.extend(nodes)
    return moved
