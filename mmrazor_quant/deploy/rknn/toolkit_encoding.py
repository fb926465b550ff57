"""Write a QDQ ONNX model the way rknn-toolkit2 reads it, so that the
``.rknn`` it builds holds the model's own qparams.

rknn-toolkit2 2.5.0 (``load_onnx`` + ``build(do_quantization=False)``)
does not take every Q/DQ pair at face value (measured in its simulator):

* **Zero-point 0 means symmetric.** An int8 pair with zero-point 0
  (weights, and any activation whose zero-point happens to be 0) is read
  as the range ``[-128 s, 127 s]`` and re-quantized symmetrically: scale
  ``s_t = 128 s / 127``, weights ``q_t = round(q s / s_t)``
  (``round(q * 127 / 128)``: about one weight in three moves by a step),
  activations on the grid ``s_t`` (clipped to ``[-128, 127]``). Written at
  ``s * 127 / 128`` with weights ``round(q * 128 / 127)``, the toolkit
  re-derives exactly ``s`` and ``q`` for ``q`` in ``[-127, 126]`` (the
  exporter's ``prepare_model`` keeps the weights there).
* **A conv fused into a residual add (``ConvAdd``) needs a Q/DQ pair on
  its output.** Without one the toolkit runs that conv and the add in
  float16; with one it runs them in int8 and adds the conv's result
  unrounded: the pair's qparams are not used (the simulation, which does
  not round there either, is matched for any scale). The add's output
  qparams are written there.
* **Global average pooling keeps its input's grid** (the toolkit ignores
  the qparams after a ``GlobalAveragePool`` and runs it as a depthwise conv
  of weight ``1 / (H W)``): its output is then an exact tie one time in
  ``H W``, which the simulator's float32 sums break either way. Written as
  that depthwise conv (weights 64 steps of ``1 / (64 H W)``), it takes the
  output qparams ``RKNNQuantizer`` gives it, and the ties are gone.

The biases stay float: the toolkit puts them on the grid ``s_in * s_w`` it
derives, which is ours again.

This file imports only numpy and onnx: it runs in the toolkit's venv (by
``rknn/scripts/worker.py``) as well as in the main one.
"""
from typing import Dict, List, Optional, Tuple

import numpy as np
import onnx
from onnx import helper, numpy_helper

__all__ = ['encode_for_rknn_toolkit', 'TOOLKIT_SCALE_RATIO']

#: The toolkit's symmetric scale over ours for a zero-point-0 pair.
TOOLKIT_SCALE_RATIO = 128 / 127
_QDQ = ('QuantizeLinear', 'DequantizeLinear')
_SUMMED = ('Conv', 'Gemm')


class _Graph:
    """Producers, consumers and constant values of an ONNX graph."""

    def __init__(self, model: onnx.ModelProto) -> None:
        self.graph = model.graph
        self.inits = {t.name: t for t in self.graph.initializer}
        self.producer = {o: n for n in self.graph.node for o in n.output}
        self.users: Dict[str, List[onnx.NodeProto]] = {}
        for node in self.graph.node:
            for name in node.input:
                self.users.setdefault(name, []).append(node)

    def source(self, name: str) -> Optional[str]:
        """The initializer behind ``name`` (through ``Identity``), if any."""
        while name not in self.inits:
            node = self.producer.get(name)
            if node is None or node.op_type != 'Identity':
                return None
            name = node.input[0]
        return name

    def value(self, name: str) -> Optional[np.ndarray]:
        src = self.source(name)
        if src is not None:
            return numpy_helper.to_array(self.inits[src])
        node = self.producer.get(name)
        if node is not None and node.op_type == 'Constant':
            return numpy_helper.to_array(node.attribute[0].t)
        return None

    def add_initializer(self, array: np.ndarray, name: str) -> str:
        """Add ``array`` under ``name`` (made unique); returns the name."""
        while name in self.inits or name in self.producer:
            name += '_'
        tensor = numpy_helper.from_array(array, name)
        self.graph.initializer.append(tensor)
        self.inits[name] = self.graph.initializer[-1]
        return name


def _zero_point_zero_int8(g: _Graph, node: onnx.NodeProto) -> bool:
    zp = g.value(node.input[2]) if len(node.input) > 2 else None
    return zp is not None and zp.dtype == np.int8 and not zp.any()


def _rescaled(g: _Graph, scale_name: str, done: Dict[str, str]) -> str:
    """The name of ``scale * 127 / 128`` (a new initializer, once per
    scale)."""
    if scale_name not in done:
        scale = g.value(scale_name).astype(np.float64) / TOOLKIT_SCALE_RATIO
        done[scale_name] = g.add_initializer(scale.astype(np.float32),
                                             f'{scale_name}_rknn')
    return done[scale_name]


def _axis_shape(node: onnx.NodeProto, ndim: int, scale: np.ndarray):
    if scale.ndim == 0:
        return scale
    axis = next((a.i for a in node.attribute if a.name == 'axis'), 1)
    shape = [1] * ndim
    shape[axis] = -1
    return scale.reshape(shape)


def _encode_weight(g: _Graph, node: onnx.NodeProto,
                   new_scale: str) -> int:
    """Rewrite the constant weight a zero-point-0 pair reads (float behind
    a QuantizeLinear, or int8 behind a DequantizeLinear) to
    ``round(q * 128 / 127)`` steps of the new scale; returns how many of its
    integers have no encoding (``+127`` and ``-128``: the toolkit makes
    them ``+126`` and ``-127``)."""
    src = g.source(node.input[0])
    weight = numpy_helper.to_array(g.inits[src])
    if node.op_type == 'QuantizeLinear':
        scale = _axis_shape(node, weight.ndim, g.value(node.input[1]))
        ours = np.clip(np.rint(weight.astype(np.float32) / scale), -128, 127)
    else:
        ours = weight.astype(np.float64)
    encoded = np.clip(np.rint(ours * TOOLKIT_SCALE_RATIO), -128, 127)
    if node.op_type == 'QuantizeLinear':
        step = _axis_shape(node, weight.ndim, g.value(new_scale))
        encoded = (encoded * step).astype(np.float32)
    else:
        encoded = encoded.astype(np.int8)
    node.input[0] = g.add_initializer(encoded, f'{src}_rknn')
    return int(((ours > 126) | (ours < -127)).sum())


def _rescale_zero_point_zero(g: _Graph) -> Tuple[int, int, int]:
    """Pairs with zero-point 0 at ``s * 127 / 128``, weights re-encoded;
    returns (pairs, weights, weight integers without an encoding)."""
    done: Dict[str, str] = {}
    pairs = weights = top = 0
    for node in list(g.graph.node):
        if node.op_type not in _QDQ or not _zero_point_zero_int8(g, node):
            continue
        new_scale = _rescaled(g, node.input[1], done)
        pairs += node.op_type == 'QuantizeLinear'
        if g.source(node.input[0]) is not None:  # a constant: a weight
            top += _encode_weight(g, node, new_scale)
            weights += 1
        node.input[1] = new_scale
    return pairs, weights, top


def _quantize_fused_sums(g: _Graph) -> int:
    """A Q/DQ pair (the add's output qparams) between each conv/linear and
    the residual add that alone reads its float output; returns how many."""
    after: Dict[str, List[onnx.NodeProto]] = {}
    for add in [n for n in g.graph.node if n.op_type == 'Add']:
        out_q = next((u for u in g.users.get(add.output[0], [])
                      if u.op_type == 'QuantizeLinear'), None)
        if out_q is None:
            continue
        for i, name in enumerate(add.input):
            src = g.producer.get(name)
            if src is None or src.op_type not in _SUMMED or \
                    len(g.users.get(name, [])) != 1:
                continue
            q, dq = f'{name}_rknn_q', f'{name}_rknn_dq'
            after[name] = [
                helper.make_node('QuantizeLinear', [name] + out_q.input[1:],
                                 [q], name=f'{src.name}_rknn_Q'),
                helper.make_node('DequantizeLinear', [q] + out_q.input[1:],
                                 [dq], name=f'{src.name}_rknn_DQ')
            ]
            add.input[i] = dq
    if after:
        nodes = []
        for node in g.graph.node:
            nodes.append(node)
            for out in node.output:
                nodes += after.get(out, [])
        del g.graph.node[:]
        g.graph.node.extend(nodes)
    return len(after)


#: The integer weight of a global average pool written as a depthwise conv
#: (its scale is ``1 / (POOL_WEIGHT * H * W)``): encoded as 65, which the
#: toolkit reads back as 64 (see the zero-point-0 rule).
POOL_WEIGHT = 64


def _pools_as_convs(model: onnx.ModelProto) -> int:
    """Each ``GlobalAveragePool`` whose input shape is known as a depthwise
    conv with Q/DQ weights; returns how many."""
    shapes = {
        v.name: [d.dim_value for d in v.type.tensor_type.shape.dim]
        for v in onnx.shape_inference.infer_shapes(model).graph.value_info
    }
    g = _Graph(model)
    nodes, pools = [], 0
    for node in g.graph.node:
        shape = shapes.get(node.input[0]) if node.op_type == \
            'GlobalAveragePool' else None
        if not shape or len(shape) != 4 or not all(shape[1:]):
            nodes.append(node)
            continue
        channels, height, width = shape[1:]
        w = g.add_initializer(
            np.full((channels, 1, height, width), 1 / (height * width),
                    np.float32), f'{node.output[0]}_rknn_w')
        qparams = [
            g.add_initializer(
                np.full(channels, 1 / (POOL_WEIGHT * height * width),
                        np.float32), f'{w}_s'),
            g.add_initializer(np.zeros(channels, np.int8), f'{w}_z')
        ]
        nodes += [
            helper.make_node('QuantizeLinear', [w] + qparams, [f'{w}_q'],
                             axis=0, name=f'{node.name}_rknn_Q'),
            helper.make_node('DequantizeLinear', [f'{w}_q'] + qparams,
                             [f'{w}_dq'], axis=0, name=f'{node.name}_rknn_DQ'),
            helper.make_node('Conv', [node.input[0], f'{w}_dq'],
                             list(node.output), group=channels,
                             kernel_shape=[height, width],
                             name=f'{node.name}_rknn_conv')
        ]
        pools += 1
    if pools:
        del g.graph.node[:]
        g.graph.node.extend(nodes)
    return pools


def encode_for_rknn_toolkit(model: onnx.ModelProto) -> Dict[str, int]:
    """Rewrite ``model`` in place for rknn-toolkit2 (see the module doc).

    Args:
        model (onnx.ModelProto): A QDQ model as the exporters write it
            (float weights behind QuantizeLinear/DequantizeLinear, float
            biases; a global average pool's input shape known to ONNX shape
            inference, else that pool is left as it is).

    Returns:
        dict: ``pools`` (global average pools written as convs),
        ``fused_sums`` (Q/DQ pairs added before residual adds),
        ``zero_point_zero`` (pairs rescaled), ``weights`` (weight tensors
        re-encoded) and ``weights_off_grid`` (integers the toolkit cannot
        hold: ``+127`` and ``-128`` run as ``+126`` and ``-127``).
    """
    pools = _pools_as_convs(model)
    fused = _quantize_fused_sums(_Graph(model))
    pairs, weights, top = _rescale_zero_point_zero(_Graph(model))
    return dict(pools=pools, fused_sums=fused, zero_point_zero=pairs,
                weights=weights, weights_off_grid=top)
