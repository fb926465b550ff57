"""Quantization parameters read back from an exported model, for the side
files written beside it."""
from typing import Dict, List, Tuple

import numpy as np
import onnx
from onnx import numpy_helper
from torch import nn

from .dead_code import remove_dead_code
from .qdq_fake_quantize import QDQFakeQuantize

__all__ = [
    'ONNX_TYPE_MIN',
    'onnx_constants', 'onnx_qparams', 'fake_quant_qparams', 'strip_qdq'
]

#: Smallest value of each integer ONNX type used as a Q/DQ container.
ONNX_TYPE_MIN = {
    onnx.TensorProto.UINT8: 0,
    onnx.TensorProto.INT8: -128,
    onnx.TensorProto.UINT4: 0,
    onnx.TensorProto.INT4: -8,
    onnx.TensorProto.UINT16: 0,
    onnx.TensorProto.INT16: -32768,
}


def onnx_constants(graph: onnx.GraphProto) -> Dict[str, np.ndarray]:
    """Values of initializers and ``Constant`` nodes, by tensor name, also
    under the names ``Identity`` nodes give them (the exporters share
    qparams through ``Identity``)."""
    values = {t.name: numpy_helper.to_array(t) for t in graph.initializer}
    for node in graph.node:
        if node.op_type == 'Constant':
            attr = next((a for a in node.attribute if a.name == 'value'),
                        None)
            if attr is not None:
                values[node.output[0]] = numpy_helper.to_array(attr.t)
        elif node.op_type == 'Identity' and node.input[0] in values:
            values[node.output[0]] = values[node.input[0]]
    return values


def _attr(node: onnx.NodeProto, name: str, default):
    for attr in node.attribute:
        if attr.name == name:
            return onnx.helper.get_attribute_value(attr)
    return default


def onnx_qparams(model: onnx.ModelProto) -> Dict[str, dict]:
    """qparams of every tensor a ``QuantizeLinear`` quantizes, keyed by the
    name of its (float) input tensor in ``model``.

    Returns:
        dict: ``{tensor: {'scale': [...], 'zero_point': [...], 'axis': int
        | None, 'dtype': 'INT8' | ...}}``; per-tensor lists hold one value.
    """
    graph = model.graph
    consts = onnx_constants(graph)
    types = {v.name: v.type.tensor_type.elem_type for v in graph.value_info}
    table = {}
    for node in graph.node:
        if node.op_type != 'QuantizeLinear':
            continue
        scale = consts[node.input[1]]
        zp = consts.get(node.input[2]) if len(node.input) > 2 else None
        elem = types.get(node.output[0]) or (
            _attr(node, 'output_dtype', 0) if zp is None else None)
        dtype = onnx.TensorProto.DataType.Name(elem) if elem else (
            'UINT8' if zp is None else str(zp.dtype).upper())
        table[node.input[0]] = dict(
            scale=np.atleast_1d(scale).astype(float).tolist(),
            zero_point=(np.zeros(scale.size, dtype=int) if zp is None else
                        np.atleast_1d(zp).astype(int)).tolist(),
            axis=_attr(node, 'axis', 1) if scale.ndim else None,
            dtype=dtype)
    return table


def fake_quant_qparams(model: nn.Module) -> Dict[str, dict]:
    """Scheme and qparams of every fake quant of a deploy model, by module
    name."""
    table = {}
    for name, module in model.named_modules():
        if not isinstance(module, QDQFakeQuantize):
            continue
        table[name] = dict(
            quant_min=module.quant_min,
            quant_max=module.quant_max,
            per_channel_axis=module.ch_axis
            if module.is_per_channel else None,
            scale=module.scale.reshape(-1).tolist(),
            zero_point=module.zero_point.reshape(-1).tolist(),
            onnx_type=module.qtype.name if module.qtype else None)
    return table


def strip_qdq(model: onnx.ModelProto
              ) -> Tuple[onnx.ModelProto, List[Tuple[str, np.ndarray,
                                                     np.ndarray]]]:
    """Remove every ``QuantizeLinear`` → ``DequantizeLinear`` pair.

    Consumers of the ``DequantizeLinear`` output read the ``QuantizeLinear``
    input instead, so the result is the float model on the same tensor
    names.

    Args:
        model (onnx.ModelProto): A QDQ model (not modified).

    Returns:
        tuple: The float model, and ``(tensor name, scale, zero_point)`` of
        each removed pair.

    Raises:
        ValueError: If a ``QuantizeLinear`` is not followed by exactly one
            ``DequantizeLinear``.
    """
    model = onnx.ModelProto.FromString(model.SerializeToString())
    graph = model.graph
    consts = onnx_constants(graph)
    consumers: Dict[str, List[onnx.NodeProto]] = {}
    for node in graph.node:
        for name in node.input:
            consumers.setdefault(name, []).append(node)
    rename, removed, pairs = {}, set(), []
    for node in graph.node:
        if node.op_type != 'QuantizeLinear':
            continue
        users = consumers.get(node.output[0], [])
        if len(users) != 1 or users[0].op_type != 'DequantizeLinear':
            raise ValueError(f'QuantizeLinear {node.name!r} is not followed '
                             'by exactly one DequantizeLinear')
        rename[users[0].output[0]] = node.input[0]
        removed.update({id(node), id(users[0])})
        zp = consts.get(node.input[2]) if len(node.input) > 2 else None
        scale = consts[node.input[1]]
        pairs.append((node.input[0], scale,
                      np.zeros_like(scale, dtype=np.int64)
                      if zp is None else zp))
    kept = [n for n in graph.node if id(n) not in removed]
    for node in kept:
        for i, name in enumerate(node.input):
            node.input[i] = rename.get(name, name)
    for output in graph.output:
        output.name = rename.get(output.name, output.name)
    del graph.node[:]
    graph.node.extend(kept)
    del graph.value_info[:]
    remove_dead_code(model)
    return model, pairs
