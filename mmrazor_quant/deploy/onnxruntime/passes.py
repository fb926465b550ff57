"""ONNX graph passes for onnxruntime's CPU provider.

:func:`drop_clips_inside_grid` removes a ``Relu``/``Clip`` (ReLU, ReLU6)
feeding a per-tensor ``QuantizeLinear`` whose whole integer grid already lies
inside the clip range. ``QuantizeLinear`` saturates to its type, so the clip
changes no quantized value there. onnxruntime folds such clips itself at
8 bits, but its ``Clip -> QuantizeLinear`` fusion rejects INT4/UINT4
zero-points: a MobileNetV2 W4A4 model (ReLU6 before every 4-bit quantization)
fails to load with the default graph optimizations unless the clips are gone.
A ``Clip`` that does change values (the grid reaches past it) before a 4-bit
``QuantizeLinear`` becomes the equal ``Min``/``Max`` pair, which that fusion
does not match (onnxruntime has no 4-bit kernel to lose).
"""
from typing import Dict, List, Optional, Tuple

import numpy as np
import onnx
from onnx import helper, numpy_helper

from ..dead_code import remove_dead_code
from ..qparams_table import ONNX_TYPE_MIN, onnx_constants

__all__ = ['drop_clips_inside_grid']

#: Largest value of each integer ONNX type used as a Q/DQ container.
_TYPE_MAX = {
    onnx.TensorProto.UINT8: 255,
    onnx.TensorProto.INT8: 127,
    onnx.TensorProto.UINT4: 15,
    onnx.TensorProto.INT4: 7,
    onnx.TensorProto.UINT16: 65535,
    onnx.TensorProto.INT16: 32767,
}
# Rounding margin: a bound within this many steps of a grid level's
# rounding boundary keeps its clip.
_MARGIN = 1e-3


def _clip_range(node: onnx.NodeProto, values: Dict[str, np.ndarray]
                ) -> Optional[Tuple[float, float]]:
    """``(low, high)`` of a ``Relu`` or a constant ``Clip``, else None."""
    if node.op_type == 'Relu':
        return 0.0, np.inf
    if node.op_type != 'Clip':
        return None
    bounds = []
    for index, default in ((1, -np.inf), (2, np.inf)):
        name = node.input[index] if len(node.input) > index else ''
        if name and name not in values:
            return None
        bounds.append(float(values[name]) if name else default)
    return bounds[0], bounds[1]


def _grid_range(quantize: onnx.NodeProto, values: Dict[str, np.ndarray],
                types: Dict[str, int]) -> Optional[Tuple[float, float]]:
    """``(low, high)`` in units of the input: the real values that
    quantize to the type's smallest and largest integer (inclusive), or
    None if the qparams are not per-tensor constants."""
    scale = values.get(quantize.input[1])
    zp_name = quantize.input[2] if len(quantize.input) > 2 else ''
    if scale is None or scale.size != 1 or (zp_name
                                            and zp_name not in values):
        return None
    # a per-channel pair of one channel has 1-d qparams of one element
    zero_point = int(values[zp_name].item()) if zp_name else 0
    elem = types.get(zp_name) or next(
        (a.i for a in quantize.attribute if a.name == 'output_dtype'),
        0) or onnx.TensorProto.UINT8
    if elem not in ONNX_TYPE_MIN:
        return None
    scale = float(scale.item())
    # x quantizes to type_min for every x <= low (and type_max for every
    # x >= high): round(x / s) + z saturates there.
    low = (ONNX_TYPE_MIN[elem] - zero_point + 0.5 - _MARGIN) * scale
    high = (_TYPE_MAX[elem] - zero_point - 0.5 + _MARGIN) * scale
    return low, high


def _removable(clip: Tuple[float, float], grid: Tuple[float, float]) -> bool:
    # Every value the clip changes lies where QuantizeLinear saturates to
    # the level the clipped value gets too.
    return clip[0] <= grid[0] and clip[1] >= grid[1]


def drop_clips_inside_grid(model: onnx.ModelProto) -> int:
    """Bypass each ``Relu``/``Clip`` before a ``QuantizeLinear`` when the
    clip cannot change the quantized value (see the module docstring);
    the clip node (and its bounds) are removed once nothing else reads
    them.

    Args:
        model (onnx.ModelProto): A QDQ model, modified in place.

    Returns:
        int: How many ``QuantizeLinear`` inputs were rewired.
    """
    graph = model.graph
    values = onnx_constants(graph)
    types = {t.name: t.data_type for t in graph.initializer}
    producers = {o: n for n in graph.node for o in n.output}
    rewired, split = 0, []
    for node in graph.node:
        if node.op_type != 'QuantizeLinear':
            continue
        clip = producers.get(node.input[0])
        clip_range = None if clip is None else _clip_range(clip, values)
        grid = _grid_range(node, values, types)
        if clip_range is None or grid is None:
            continue
        if _removable(clip_range, grid):
            node.input[0] = clip.input[0]
            rewired += 1
        elif clip.op_type == 'Clip' and _is_4bit(node, types):
            split.append(clip)
    _split_clips(graph, split, values)
    remove_dead_code(model)
    return rewired


def _is_4bit(quantize: onnx.NodeProto, types: Dict[str, int]) -> bool:
    zp_name = quantize.input[2] if len(quantize.input) > 2 else ''
    elem = types.get(zp_name) or next(
        (a.i for a in quantize.attribute if a.name == 'output_dtype'), 0)
    return elem in (onnx.TensorProto.INT4, onnx.TensorProto.UINT4)


def _split_clips(graph: onnx.GraphProto, clips: List[onnx.NodeProto],
                 values: Dict[str, np.ndarray]) -> None:
    """Replace each constant ``Clip`` in ``clips`` by ``Max(Min(x, hi),
    lo)`` (same values, same output name)."""
    names = {c.output[0] for c in clips}
    nodes = []
    for node in graph.node:
        if node.output and node.output[0] in names and \
                node.op_type == 'Clip':
            nodes.extend(_min_max(graph, node, values))
        else:
            nodes.append(node)
    del graph.node[:]
    graph.node.extend(nodes)


def _min_max(graph: onnx.GraphProto, clip: onnx.NodeProto,
             values: Dict[str, np.ndarray]) -> List[onnx.NodeProto]:
    low, high = _clip_range(clip, values)
    out, name = clip.output[0], clip.output[0]
    for bound in (low, high):
        if np.isfinite(bound):
            graph.initializer.append(numpy_helper.from_array(
                np.array(bound, dtype=np.float32), f'{name}_{bound:g}'))
    nodes, x = [], clip.input[0]
    if np.isfinite(high):
        nodes.append(helper.make_node('Min', [x, f'{name}_{high:g}'],
                                      [f'{name}_min'], name=f'{name}_min'))
        x = f'{name}_min'
    nodes.append(helper.make_node(
        'Max', [x, f'{name}_{low:g}'], [out], name=f'{name}_max')
        if np.isfinite(low) else helper.make_node('Identity', [x], [out]))
    return nodes

