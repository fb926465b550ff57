"""ONNX graph passes that make OpenVINO's CPU plugin compute what the
simulation computes.

What the plugin does (OpenVINO 2026.4's CPU plugin, see
``docs/deploy.md``): it reads each ``QuantizeLinear``/``DequantizeLinear``
pair as a ``FakeQuantize`` and fuses ``Conv -> FakeQuantize -> Add -> ReLU
-> FakeQuantize`` into one int8 convolution whose residual ``Add`` is a
oneDNN *sum* post-op. The ``FakeQuantize`` placed directly before that sum
keeps its clamp but loses its rounding, so the residual adds the
*unrounded* conv output: about a quarter of the block's outputs end one step
away from the simulation, and the error grows through the network.

:func:`guard_fused_sum_inputs` puts a ``Max(x, low)`` between such a
``DequantizeLinear`` and the ``Add``, with ``low`` the smallest value the
``DequantizeLinear`` can produce. It changes no value, but the
``FakeQuantize`` is then no longer the post-op right before the sum and the
plugin rounds it. An ``Add`` with a float input straight from a conv/linear
(``OpenVINOQuantizer``'s placement) needs no guard: the plugin fuses it into
that conv, whose other operands were rounded by their own producers, and a
guard would only keep the add out of the conv.

A second case: a conv output ``x`` that feeds a ``QuantizeLinear`` *and* a
float consumer (an FPN's lateral conv, quantized for its 3x3 output conv and
upsampled unquantized for the top-down add). The low-precision
transformations fold the conv's dequantization ``Multiply`` into the
``FakeQuantize``'s input range although the conv, whose other consumer
needs float, still applies it: the ``FakeQuantize`` sees ``x`` against a
range stretched by ``1 / (s_in * s_w)`` and returns its zero-point for every
element (an FPN level of RetinaNet then carries nothing to the head).
:func:`guard_shared_quantize_inputs` puts the same value-preserving ``Max``
before such a ``QuantizeLinear``, and the plugin quantizes ``x`` on its own
range. The same happens where the quantize reads ``x`` through an
element-wise op and ``x`` has another consumer (FCOS's FPN: ``P6`` quantized
for the head and ``ReLU(P6)`` quantized for the extra conv that makes
``P7``, whose head outputs are then the bare biases); the guard then goes
before that op, on ``x``.

A third rewrite changes no value either: a tensor with negative values on an
unsigned symmetric grid (zero-point 128 on ``[0, 255]``) is written as int8
with zero-point 0, the same 256 levels. With a uint8 container the plugin
keeps a zero-point ``Subtract`` and runs every conv reading that tensor as a
u8 kernel with input zero-point compensation; the int8 container gives the
i8 kernels that NNCF's symmetric signed activations get (the demo
MobileNetV2 compiles to the same layers, type by type and precision by
precision, as NNCF's model; see :func:`signed_grids_as_int8`).

A fourth is exact in integers: an asymmetric activation ``s * (q - z)``
into a linear layer (``MatMul`` or ``Gemm`` by a constant weight ``W``) is
written as ``s * q`` with the zero-point's share moved into the bias,
``b - s * z * sum_k W[k, :]``. The plugin's convolutions take an input
zero-point natively (a oneDNN attribute), its fully connected layers do not:
they subtract ``s * z * sum_k W[k, :]`` as a per-channel post-op and then
apply the per-channel scales and the bias as two more (three binary
post-ops on every output, the 6625 classes of PP-OCRv4's CTC head among
them) instead of native weight scales and one bias add, as NNCF's symmetric
activations get (see :func:`linear_zero_points_into_bias`).
"""
from typing import Dict, List, Tuple

import numpy as np
import onnx
from onnx import helper, numpy_helper

from ..qparams_table import ONNX_TYPE_MIN, onnx_constants

__all__ = ['guard_fused_sum_inputs', 'guard_shared_quantize_inputs',
           'signed_grids_as_int8', 'linear_zero_points_into_bias',
           'FUSING_PRODUCERS']

#: Ops OpenVINO's CPU plugin fuses a following ``Add`` into (as a sum
#: post-op), through element-wise activations and clamps.
FUSING_PRODUCERS = ('Conv', 'ConvTranspose', 'Gemm', 'MatMul')
_PASS_THROUGH = ('Relu', 'Max', 'Min', 'Clip', 'Identity')
#: What a shared-output guard looks through: also ``MaxPool``, monotone
#: too (the ``Max`` commutes with it): Faster R-CNN's FPN makes P6 by
#: pooling P5, which the RPN also reads.
_SHARED_PASS_THROUGH = _PASS_THROUGH + ('MaxPool', )


def graph_links(graph: onnx.GraphProto):
    """``({tensor: producing node}, {tensor: [consuming nodes]})``."""
    producers = {o: n for n in graph.node for o in n.output}
    consumers: Dict[str, List[onnx.NodeProto]] = {}
    for node in graph.node:
        for name in node.input:
            consumers.setdefault(name, []).append(node)
    return producers, consumers


def _bias_add_input(node: onnx.NodeProto, values: Dict[str, np.ndarray]):
    """The non-constant input of a bias ``Add`` (a constant on one side),
    or None. A linear layer on a 3-D input exports as ``MatMul`` + ``Add``
    (transformer tokens), and the plugin fuses the bias too."""
    if node.op_type != 'Add' or len(node.input) != 2:
        return None
    a, b = node.input
    if b in values and a not in values:
        return a
    if a in values and b not in values:
        return b
    return None


def _fused_producer(name: str, producers: Dict[str, onnx.NodeProto],
                    values: Dict[str, np.ndarray],
                    through: Tuple[str, ...] = _PASS_THROUGH) -> bool:
    node = producers.get(name)
    while node is not None:
        if node.op_type in through:
            node = producers.get(node.input[0])
            continue
        data = _bias_add_input(node, values)
        if data is None:
            break
        node = producers.get(data)
    return node is not None and node.op_type in FUSING_PRODUCERS


def _dq_lower_bound(dq: onnx.NodeProto, quantize: onnx.NodeProto,
                    values: Dict[str, np.ndarray]) -> float:
    """``(type_min - z) * s``, the smallest output of a per-tensor DQ."""
    scale = values[dq.input[1]]
    zero_point = values.get(dq.input[2]) if len(dq.input) > 2 else None
    elem = next((a.i for a in quantize.attribute
                 if a.name == 'output_dtype'), 0)
    if zero_point is not None:
        elem = helper.np_dtype_to_tensor_dtype(zero_point.dtype)
    type_min = ONNX_TYPE_MIN.get(elem or onnx.TensorProto.UINT8, 0)
    zp = 0 if zero_point is None else int(zero_point)
    return float((type_min - zp) * float(scale))


def _has_float_sum_operand(add: onnx.NodeProto,
                           producers: Dict[str, onnx.NodeProto],
                           values: Dict[str, np.ndarray]) -> bool:
    """Whether an input of ``add`` is the float output of a fusing op: the
    plugin fuses the add into that op, whose other operands are then
    rounded by their own producers, so no input needs a guard."""
    return any(
        producers.get(name) is not None
        and producers[name].op_type != 'DequantizeLinear'
        and _fused_producer(name, producers, values) for name in add.input)


def _guarded_inputs(graph: onnx.GraphProto
                    ) -> List[Tuple[int, int, float]]:
    """``(position of the add, input index, lower bound)`` of every
    per-tensor DQ that feeds an ``Add`` and quantizes the output of a fusing
    op."""
    producers = {o: n for n in graph.node for o in n.output}
    values = onnx_constants(graph)
    found = []
    for position, node in enumerate(graph.node):
        if node.op_type != 'Add' or _has_float_sum_operand(
                node, producers, values):
            continue
        for index, name in enumerate(node.input):
            dq = producers.get(name)
            if dq is None or dq.op_type != 'DequantizeLinear':
                continue
            quantize = producers.get(dq.input[0])
            if quantize is None or quantize.op_type != 'QuantizeLinear' \
                    or values.get(dq.input[1]) is None \
                    or values[dq.input[1]].size != 1:
                continue
            if _fused_producer(quantize.input[0], producers, values):
                found.append(
                    (position, index, _dq_lower_bound(dq, quantize, values)))
    return found


def _shared_quantize_inputs(graph: onnx.GraphProto
                            ) -> List[Tuple[int, int, float]]:
    """``(position, input index, lower bound)`` of a guard for every
    per-tensor ``QuantizeLinear`` on a conv/linear output that also has a
    consumer other than a ``QuantizeLinear`` or a ``Shape``: right before the
    quantize, or, where the quantize reads the output through element-wise
    ops (``Relu``, ``Clip``: an FPN's extra conv on ``ReLU(P6)``; or
    ``MaxPool``: an FPN's P6 pooled from P5), before the first of them, on
    the shared tensor."""
    producers, consumers = graph_links(graph)
    positions = {id(node): p for p, node in enumerate(graph.node)}
    values = onnx_constants(graph)
    found: Dict[Tuple[int, int], float] = {}
    for node in graph.node:
        if node.op_type != 'QuantizeLinear' or node.input[0] in values \
                or values.get(node.input[1]) is None \
                or values[node.input[1]].size != 1 \
                or not _fused_producer(node.input[0], producers, values,
                                       _SHARED_PASS_THROUGH):
            continue
        name, reader = node.input[0], node
        while True:
            # beside the quantize itself, another quantize is no float
            # consumer; beside an element-wise op, it is a second branch
            ignored = ('QuantizeLinear', 'Shape') if reader is node \
                else ('Shape', )
            others = [c for c in consumers[name]
                      if c is not reader and c.op_type not in ignored]
            if others:
                # Max(x, low) raises only values the quantize saturates
                # to q_min anyway; Relu/Clip/Max/Min are monotone
                key = (positions[id(reader)], list(reader.input).index(name))
                low = _dq_lower_bound(node, node, values)
                found[key] = min(low, found.get(key, low))
                break
            producer = producers.get(name)
            if producer is None \
                    or producer.op_type not in _SHARED_PASS_THROUGH:
                break
            name, reader = producer.input[0], producer
    return [(p, i, low) for (p, i), low in sorted(found.items())]


def _insert_max_guards(graph: onnx.GraphProto,
                       guards: List[Tuple[int, int, float]]) -> int:
    """Insert ``Max(input, low)`` before input ``index`` of the node at
    ``position`` for each ``(position, index, low)``; returns how many."""
    edits: Dict[int, List[Tuple[int, float]]] = {}
    for position, index, low in guards:
        edits.setdefault(position, []).append((index, low))
    nodes = []
    for position, node in enumerate(graph.node):
        node = onnx.NodeProto.FromString(node.SerializeToString())
        for index, low in edits.get(position, []):
            name = node.input[index]
            guarded = f'{name}_ov_guard_{node.name or position}'
            bound = numpy_helper.from_array(
                np.array(low, dtype=np.float32), f'{guarded}_low')
            graph.initializer.append(bound)
            nodes.append(
                helper.make_node('Max', [name, bound.name], [guarded],
                                 name=guarded))
            node.input[index] = guarded
        nodes.append(node)
    # Each Max goes right before its consumer: the list stays topologically
    # sorted.
    del graph.node[:]
    graph.node.extend(nodes)
    return len(guards)


def guard_fused_sum_inputs(model: onnx.ModelProto) -> int:
    """Insert a value-preserving ``Max`` between each quantized conv/linear
    output and the residual ``Add`` it feeds (see the module docstring).

    Args:
        model (onnx.ModelProto): A QDQ model, modified in place.

    Returns:
        int: How many ``Max`` nodes were inserted.
    """
    return _insert_max_guards(model.graph, _guarded_inputs(model.graph))


def guard_shared_quantize_inputs(model: onnx.ModelProto) -> int:
    """Insert a value-preserving ``Max`` before each ``QuantizeLinear`` on a
    conv/linear output that a float consumer reads too (see the module
    docstring). ``Max(x, (q_min - z) * s)`` only raises values that the
    quantization saturates to ``q_min`` anyway.

    Args:
        model (onnx.ModelProto): A QDQ model, modified in place.

    Returns:
        int: How many ``Max`` nodes were inserted.
    """
    return _insert_max_guards(model.graph,
                              _shared_quantize_inputs(model.graph))



def _midpoint_uint8_zero_points(graph: onnx.GraphProto
                                ) -> Dict[str, Tuple[int, ...]]:
    """Zero-point tensors (name -> shape) of Q/DQ nodes that are uint8 and
    128 everywhere: a signed tensor on an unsigned symmetric grid."""
    values = onnx_constants(graph)
    found = {}
    for node in graph.node:
        if node.op_type not in ('QuantizeLinear', 'DequantizeLinear') \
                or len(node.input) < 3:
            continue
        zero_point = values.get(node.input[2])
        if zero_point is not None and zero_point.dtype == np.uint8 \
                and bool(np.all(zero_point == 128)):
            found[node.input[2]] = zero_point.shape
    return found


def signed_grids_as_int8(model: onnx.ModelProto) -> int:
    """Write each uint8 grid whose zero-point is 128 as int8 with zero-point
    0 (see the module docstring): ``q - 128`` for ``q`` in ``[0, 255]`` is
    the int8 range, so every dequantized value is unchanged. The export's
    ``.qparams.json`` keeps the grid as the fake quant defines it (uint8,
    zero-point 128): the same levels.

    Args:
        model (onnx.ModelProto): A QDQ model, modified in place.

    Returns:
        int: How many ``QuantizeLinear``/``DequantizeLinear`` nodes now use
        an int8 zero-point.
    """
    graph = model.graph
    midpoints = _midpoint_uint8_zero_points(graph)
    int8_zero_points: Dict[Tuple[int, ...], str] = {}
    retyped = set()
    for node in graph.node:
        if node.op_type not in ('QuantizeLinear', 'DequantizeLinear') \
                or len(node.input) < 3 or node.input[2] not in midpoints:
            continue
        shape = tuple(midpoints[node.input[2]])
        if shape not in int8_zero_points:
            name = f'ov_int8_zero_point_{len(int8_zero_points)}'
            graph.initializer.append(
                numpy_helper.from_array(np.zeros(shape, np.int8), name))
            int8_zero_points[shape] = name
        node.input[2] = int8_zero_points[shape]
        if node.op_type == 'QuantizeLinear':
            retyped.add(node.output[0])
    # shape inference recorded the quantized tensors as uint8
    for info in graph.value_info:
        if info.name in retyped:
            info.type.tensor_type.elem_type = onnx.TensorProto.INT8
    return sum(1 for node in graph.node if len(node.input) > 2
               and node.input[2] in int8_zero_points.values())


#: Ops that only move values: a per-tensor zero-point passes through them.
_MOVES_VALUES = ('Transpose', 'Reshape', 'Squeeze', 'Unsqueeze', 'Flatten')


def _attr(node: onnx.NodeProto, name: str, default):
    return next((helper.get_attribute_value(a) for a in node.attribute
                 if a.name == name), default)


def _per_axis(values: np.ndarray, axis: int, ndim: int) -> np.ndarray:
    if values.size == 1:
        return values.reshape(())
    shape = [1] * ndim
    shape[axis % ndim] = -1
    return values.reshape(shape)


def _dequantized_weight(name: str, producers: Dict[str, onnx.NodeProto],
                        values: Dict[str, np.ndarray]):
    """The value (float64) of a constant weight ``DequantizeLinear``
    (of an integer constant or of a ``QuantizeLinear`` of a float one),
    through a ``Transpose``; None for anything else."""
    node, perm = producers.get(name), None
    if node is not None and node.op_type == 'Transpose':
        perm = _attr(node, 'perm', None)
        node = producers.get(node.input[0])
    if node is None or node.op_type != 'DequantizeLinear' \
            or node.input[1] not in values:
        return None
    if node.input[0] in values:
        q = values[node.input[0]].astype(np.float64)
    else:
        quantize = producers.get(node.input[0])
        if quantize is None or quantize.op_type != 'QuantizeLinear' \
                or any(i not in values for i in quantize.input if i):
            return None
        w = values[quantize.input[0]].astype(np.float64)
        axis = _attr(quantize, 'axis', 1)
        scale = _per_axis(values[quantize.input[1]], axis, w.ndim)
        zero_point = values[quantize.input[2]] if len(quantize.input) > 2 \
            else np.zeros((), np.uint8)
        info = np.iinfo(zero_point.dtype)
        q = np.clip(np.round(w / scale) + _per_axis(
            zero_point.astype(np.float64), axis, w.ndim), info.min, info.max)
    axis = _attr(node, 'axis', 1)
    scale = _per_axis(values[node.input[1]].astype(np.float64), axis,
                      q.ndim)
    zero_point = values.get(node.input[2]) if len(node.input) > 2 else None
    if zero_point is not None:
        q = q - _per_axis(zero_point.astype(np.float64), axis, q.ndim)
    weight = q * scale
    return weight if perm is None else np.transpose(weight, perm)


def _activation_zero_point(name: str, producers: Dict[str, onnx.NodeProto],
                           consumers: Dict[str, List[onnx.NodeProto]],
                           values: Dict[str, np.ndarray]):
    """The per-tensor ``DequantizeLinear`` whose output reaches ``name``
    through ops that only move values, each read by the next alone, if its
    zero-point is not 0; else None."""
    node = producers.get(name)
    while node is not None and node.op_type in _MOVES_VALUES \
            and len(consumers.get(name, ())) == 1:
        name = node.input[0]
        node = producers.get(name)
    if node is None or node.op_type != 'DequantizeLinear' \
            or len(consumers.get(name, ())) != 1 or len(node.input) < 3:
        return None
    scale, zero_point = values.get(node.input[1]), values.get(node.input[2])
    if scale is None or zero_point is None or scale.size != 1 \
            or zero_point.size != 1 or int(zero_point) == 0:
        return None
    return node


def _linear_layers(graph: onnx.GraphProto):
    """``(activation DQ, weight [K, N], node holding the bias, index of
    the bias input or None)`` of each ``MatMul`` (+ constant ``Add``) and
    ``Gemm`` by a constant weight whose activation has a zero-point."""
    producers, consumers = graph_links(graph)
    values = onnx_constants(graph)
    for node in graph.node:
        if node.op_type == 'Gemm':
            if _attr(node, 'transA', 0) or _attr(node, 'alpha', 1.) != 1 \
                    or _attr(node, 'beta', 1.) != 1 or len(node.input) > 2 \
                    and node.input[2] and node.input[2] not in values:
                continue
            weight = _dequantized_weight(node.input[1], producers, values)
            if weight is not None and _attr(node, 'transB', 0):
                weight = weight.T
            bias = (node, 2 if len(node.input) > 2 and node.input[2]
                    else None)
        elif node.op_type == 'MatMul':
            weight = _dequantized_weight(node.input[1], producers, values)
            users = consumers.get(node.output[0], [])
            bias = (node, None)
            if len(users) == 1 and _bias_add_input(users[0], values) \
                    == node.output[0]:
                bias = (users[0], 1 - list(users[0].input).index(
                    node.output[0]))
        else:
            continue
        if weight is None or weight.ndim != 2:
            continue
        dq = _activation_zero_point(node.input[0], producers, consumers,
                                    values)
        if dq is not None:
            yield dq, weight, bias[0], bias[1]


def linear_zero_points_into_bias(model: onnx.ModelProto) -> int:
    """Move the zero-point of each asymmetric activation that only a
    linear layer reads (through reshapes and transposes) into that layer's
    bias (see the module docstring): the ``DequantizeLinear`` gets
    zero-point 0, the bias ``b - s * z * sum_k W[k, :]`` (a new ``Add``
    after a ``MatMul`` without one). The output is the same up to float
    rounding; the ``QuantizeLinear`` and its grid are unchanged.

    Args:
        model (onnx.ModelProto): A QDQ model, modified in place.

    Returns:
        int: How many linear layers take their activation without a
        zero-point.
    """
    graph = model.graph
    values = onnx_constants(graph)
    found = list(_linear_layers(graph))
    appended = []
    for index, (dq, weight, holder, bias_index) in enumerate(found):
        scale, zero_point = values[dq.input[1]], values[dq.input[2]]
        shift = float(scale) * int(zero_point) * weight.sum(axis=0)
        name = f'{holder.name or holder.output[0]}_ov_folded_zero_point'
        if bias_index is None:
            bias = -shift
        else:
            bias = values[holder.input[bias_index]].astype(np.float64)
            bias = np.broadcast_to(bias, np.broadcast_shapes(
                bias.shape, shift.shape)) - shift
        graph.initializer.append(
            numpy_helper.from_array(bias.astype(np.float32), name))
        zero = f'{name}_zero'
        graph.initializer.append(numpy_helper.from_array(
            np.zeros((), zero_point.dtype), zero))
        dq.input[2] = zero
        if bias_index is not None:
            holder.input[bias_index] = name
        elif holder.op_type == 'Gemm':
            holder.input.append(name)
        else:  # MatMul: its output through a new bias Add
            unbiased = f'{holder.output[0]}_ov_unbiased'
            appended.append((holder, helper.make_node(
                'Add', [unbiased, name], [holder.output[0]],
                name=f'{holder.name}_ov_bias')))
            holder.output[0] = unbiased
    if appended:
        nodes = []
        adds = {id(holder): add for holder, add in appended}
        for node in graph.node:
            nodes.append(node)
            if id(node) in adds:
                nodes.append(adds[id(node)])
        del graph.node[:]
        graph.node.extend(nodes)
    return len(found)
