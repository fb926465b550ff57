"""Convert a QDQ ONNX model (this project's export) into a full-integer
int8 TFLite graph that carries exactly its scales and zero-points.

Every ``op -> QuantizeLinear`` of the ONNX model becomes one int8 TFLite op
whose output tensor has that ``QuantizeLinear``'s qparams; a ReLU/ReLU6
between them becomes the op's fused activation; weights are the int8
values of their ``QuantizeLinear`` (half-to-even, as the simulation) with
their per-channel scales, biases int32 on ``s_in * s_w``. Shape ops run on
int8 tensors and keep the grid. 4-D activations are NHWC inside the graph;
the model's input and output keep the ONNX layout.

Ops without an int8 kernel are refused (:class:`UnsupportedOpError`, naming
the op and its layer) unless they are listed in ``float_ops``: those run in
float32 between a DEQUANTIZE and a QUANTIZE (LayerNorm, which LiteRT has no
int8 kernel for).
"""
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np
import onnx
from onnx import numpy_helper

from mmrazor_quant.backends.litert import SOFTMAX_QPARAMS
from .flatbuffer import QParams, TFLiteGraph, schema_module

__all__ = ['convert_qdq_onnx', 'UnsupportedOpError', 'SUPPORTED_OPS']

#: ONNX ops the converter maps (the GELU pattern Div/Erf/Add/Mul/Mul
#: counts as one GELU).
SUPPORTED_OPS = (
    'Conv', 'Gemm', 'MatMul', 'Add', 'Sub', 'Mul', 'Relu', 'Clip',
    'GlobalAveragePool', 'AveragePool', 'MaxPool', 'Softmax', 'Gelu',
    'Concat', 'Reshape', 'Flatten', 'Transpose', 'Gather', 'Squeeze',
    'Unsqueeze', 'LayerNormalization')
_SHAPE_OPS = ('Reshape', 'Flatten', 'Transpose', 'Gather', 'Squeeze',
              'Unsqueeze')
#: Ops that take a fused activation in TFLite.
_FUSES_ACTIVATION = ('conv', 'depthwise', 'fc', 'add', 'sub', 'mul',
                     'concat', 'avgpool')
_NCHW_TO_NHWC = (0, 2, 3, 1)
_NHWC_TO_NCHW = (0, 3, 1, 2)
_SQRT2 = float(np.sqrt(2.0))
_INT32 = np.iinfo(np.int32)


class UnsupportedOpError(ValueError):
    """An ONNX op that LiteRT cannot run in int8 (or that this converter
    does not map), named with its layer."""


@dataclass
class QValue:
    """An int8 TFLite tensor, seen as its dequantized ONNX value.

    ``nhwc``: the TFLite tensor is the NHWC permutation of the 4-D ONNX
    (NCHW) tensor.
    """
    index: int
    shape: Tuple[int, ...]
    qparams: QParams
    nhwc: bool = False


@dataclass
class QConst:
    """A constant int8 tensor (a weight) with its qparams."""
    values: np.ndarray
    scale: np.ndarray
    zero_point: np.ndarray
    axis: Optional[int]
    name: str = 'const'

    def transposed(self, perm: Sequence[int]) -> 'QConst':
        axis = None if self.axis is None else list(perm).index(self.axis)
        return QConst(self.values.transpose(perm), self.scale,
                      self.zero_point, axis, self.name)


@dataclass
class Pending:
    """A float op result; the op is written when its QuantizeLinear (which
    gives the output qparams) is reached."""
    kind: str
    node: onnx.NodeProto
    inputs: list
    attrs: dict = field(default_factory=dict)
    activation: str = 'NONE'


@dataclass
class _GraphInput:
    name: str
    shape: Tuple[int, ...]


def _attrs(node: onnx.NodeProto) -> dict:
    return {a.name: onnx.helper.get_attribute_value(a)
            for a in node.attribute}


def _tensor_shapes(model: onnx.ModelProto) -> Dict[str, Tuple[int, ...]]:
    """The shape of every tensor, by running the model once on zeros in
    onnxruntime (shape inference cannot follow the ``Shape -> Concat ->
    Reshape`` arithmetic of a traced model)."""
    import onnxruntime as ort
    probe = onnx.ModelProto.FromString(model.SerializeToString())
    known = {o.name for o in probe.graph.output}
    inits = {t.name for t in probe.graph.initializer}
    for node in probe.graph.node:
        for name in node.output:
            if name and name not in known:
                probe.graph.output.append(
                    onnx.helper.ValueInfoProto(name=name))
                known.add(name)
    session = ort.InferenceSession(probe.SerializeToString(),
                                   providers=['CPUExecutionProvider'])
    feeds = {}
    for vi in probe.graph.input:
        if vi.name in inits:
            continue
        dims = tuple(d.dim_value for d in vi.type.tensor_type.shape.dim)
        feeds[vi.name] = np.zeros(dims, dtype=np.float32)
    names = [o.name for o in session.get_outputs()]
    shapes = {vi: tuple(f.shape) for vi, f in feeds.items()}
    shapes.update(
        (name, tuple(np.shape(value)))
        for name, value in zip(names, session.run(names, feeds)))
    return shapes


def _fuse_gelu(model: onnx.ModelProto) -> None:
    """Replace torch's exact GELU, ``x * (erf(x / sqrt 2) + 1) * 0.5``, by
    one ``Gelu`` node (TFLite's GELU kernel)."""
    graph = model.graph
    consts = {t.name: numpy_helper.to_array(t) for t in graph.initializer}
    for node in graph.node:
        if node.op_type == 'Constant':
            consts[node.output[0]] = numpy_helper.to_array(node.attribute[0].t)
    users: Dict[str, List[onnx.NodeProto]] = {}
    for node in graph.node:
        for name in node.input:
            users.setdefault(name, []).append(node)

    def only_user(name, op_type):
        found = users.get(name, [])
        return found[0] if len(found) == 1 and \
            found[0].op_type == op_type else None

    def const_is(name, value):
        c = consts.get(name)
        return c is not None and c.size == 1 and abs(float(c) - value) < 1e-4

    removed = set()
    for erf in [n for n in graph.node if n.op_type == 'Erf']:
        div = next((n for n in graph.node if erf.input[0] in n.output),
                   None)
        if div is None or div.op_type != 'Div' or \
                not const_is(div.input[1], _SQRT2):
            continue
        x = div.input[0]
        add = only_user(erf.output[0], 'Add')
        mul = add and only_user(add.output[0], 'Mul')
        half = mul and only_user(mul.output[0], 'Mul')
        if not (add and mul and half) or x not in mul.input or not any(
                const_is(i, 1.0) for i in add.input) or not any(
                    const_is(i, 0.5) for i in half.input):
            continue
        gelu = onnx.helper.make_node('Gelu', [x], [half.output[0]],
                                     name=erf.name.replace('Erf', 'Gelu'))
        index = list(graph.node).index(half)
        graph.node.insert(index, gelu)
        # node outputs are unique names (protobuf wrappers have no stable id)
        removed.update(n.output[0] for n in (div, erf, add, mul, half))
    kept = [n for n in graph.node
            if n.op_type == 'Gelu' or n.output[0] not in removed]
    del graph.node[:]
    graph.node.extend(kept)


class _Converter:

    def __init__(self, model: onnx.ModelProto, float_ops: Sequence[str],
                 layer_name: Callable[[str], str],
                 shapes: Dict[str, Tuple[int, ...]]) -> None:
        self.model = model
        self.graph = model.graph
        self.float_ops = tuple(float_ops)
        self.layer_name = layer_name
        self.shapes = shapes
        self.out = TFLiteGraph()
        self.values: Dict[str, object] = {
            t.name: numpy_helper.to_array(t)
            for t in self.graph.initializer
        }
        inits = set(self.values)
        for vi in self.graph.input:
            if vi.name not in inits:
                self.values[vi.name] = _GraphInput(vi.name,
                                                   self.shapes[vi.name])
        self._layouts: Dict[Tuple[int, bool], int] = {}
        self._quantizers: Dict[str, onnx.NodeProto] = {}
        for node in self.graph.node:
            if node.op_type == 'QuantizeLinear':
                self._quantizers[node.input[0]] = node

    # -- errors -----------------------------------------------------------
    def layer_of(self, node: onnx.NodeProto) -> str:
        """The fake quant (tensor) that quantizes ``node``'s result,
        following its float outputs to the next QuantizeLinear."""
        frontier, seen = list(node.output), set()
        while frontier:
            name = frontier.pop(0)
            if name in seen:
                continue
            seen.add(name)
            q = self._quantizers.get(name)
            if q is not None:
                return self.layer_name(q.input[1])
            frontier.extend(o for n in self.graph.node if name in n.input
                            for o in n.output)
        return node.name

    def unsupported(self, node: onnx.NodeProto, why: str) -> None:
        raise UnsupportedOpError(
            f'LiteRT cannot run {node.op_type} (node {node.name!r}, layer '
            f'{self.layer_of(node)!r}) in int8: {why}')

    # -- tensors ----------------------------------------------------------
    def new_tensor(self, name: str, shape, qparams: Optional[QParams],
                   dtype=np.int8) -> int:
        return self.out.add_tensor(name, shape, dtype, qparams)

    def const_int8(self, name: str, values: np.ndarray,
                   qparams: QParams) -> int:
        return self.out.add_tensor(name, values.shape, np.int8, qparams,
                                   values.astype(np.int8))

    def const_int32(self, name: str, values) -> int:
        return self.out.add_tensor(name, np.shape(values), np.int32, None,
                                   np.asarray(values, dtype=np.int32))

    def layout(self, value: QValue, nhwc: bool) -> QValue:
        """``value`` with its TFLite tensor in NHWC (``nhwc``) or in the
        ONNX layout, through a TRANSPOSE if needed (int8, same qparams)."""
        if len(value.shape) != 4 or value.nhwc == nhwc:
            return value
        key = (value.index, nhwc)
        if key not in self._layouts:
            perm = _NHWC_TO_NCHW if value.nhwc else _NCHW_TO_NHWC
            shape = _tflite_shape(value.shape, nhwc)
            index = self.new_tensor(
                self.out.tensors[value.index].name + ('_nhwc' if nhwc else
                                                       '_nchw'), shape,
                value.qparams)
            self.out.add_op('TRANSPOSE', [value.index,
                                          self.const_int32('perm', perm)],
                            [index], version=2)
            self._layouts[key] = index
        return QValue(self._layouts[key], value.shape, value.qparams, nhwc)

    def requantize(self, value: QValue, qparams: QParams,
                   name: str) -> QValue:
        """``value`` on another int8 grid (QUANTIZE int8 -> int8)."""
        if value.qparams == qparams:
            return value
        shape = _tflite_shape(value.shape, value.nhwc)
        index = self.new_tensor(name, shape, qparams)
        self.out.add_op('QUANTIZE', [value.index], [index], version=2)
        return QValue(index, value.shape, qparams, value.nhwc)

    def quantized_const(self, values: np.ndarray, name: str,
                        qparams: Optional[QParams] = None) -> QValue:
        """A float constant operand as an int8 tensor: on ``qparams``, or
        symmetric per tensor on its own range (as the TFLite converter
        quantizes constant operands)."""
        values = np.asarray(values, dtype=np.float64)
        if qparams is None:
            peak = float(np.abs(values).max()) or 1.0
            qparams = QParams.of(peak / 127.0, 0)
        q = np.clip(np.rint(values / qparams.scale[0]) + qparams.zero_point[0],
                    -128, 127)
        index = self.const_int8(name, q, qparams)
        return QValue(index, values.shape, qparams)

    def int8_operand(self, const: QConst, nhwc: bool) -> QValue:
        """A quantized constant operand (per tensor) as an int8 tensor,
        named after its fake quant."""
        name = const.name
        values = const.values
        if nhwc and values.ndim == 4:
            values = values.transpose(_NCHW_TO_NHWC)
        if const.scale.size != 1:
            raise UnsupportedOpError(f'LiteRT: the constant operand {name} '
                                     'must be quantized per tensor')
        qparams = QParams.of(const.scale, const.zero_point)
        return QValue(self.const_int8(name, values, qparams), values.shape,
                      qparams)

    # -- the walk -----------------------------------------------------------
    def run(self) -> TFLiteGraph:
        for node in self.graph.node:
            self.visit(node)
        for vo in self.graph.output:
            value = self.values.get(vo.name)
            if not isinstance(value, QValue):
                raise UnsupportedOpError(
                    f'LiteRT: the model output {vo.name!r} is not quantized '
                    '(a full-integer model ends in an int8 tensor)')
            self.out.outputs.append(self.layout(value, False).index)
        if not self.out.inputs:
            raise UnsupportedOpError(
                'LiteRT: the model input is not quantized (a full-integer '
                'model starts with an int8 tensor)')
        return self.out

    def visit(self, node: onnx.NodeProto) -> None:
        op = node.op_type
        ins = [self.values.get(name) if name else None
               for name in node.input]
        if op == 'Constant':
            result = numpy_helper.to_array(_attrs(node)['value'])
        elif op == 'Identity':
            result = ins[0]
        elif op == 'Shape' and not isinstance(ins[0], np.ndarray):
            result = np.array(self.shapes[node.input[0]], dtype=np.int64)
        elif op == 'QuantizeLinear':
            result = self.quantize(node, ins)
        elif op == 'DequantizeLinear':
            result = self.dequantize(node, ins)
        elif all(isinstance(v, np.ndarray) for v in ins if v is not None):
            result = _fold(node, ins)
        elif op in _SHAPE_OPS and isinstance(ins[0], (QValue, QConst)):
            result = self.shape_op(node, ins)
        else:
            result = self.compute(node, ins)
        self.values[node.output[0]] = result

    def quantize(self, node, ins):
        x, scale = ins[0], ins[1]
        zero_point = ins[2] if len(ins) > 2 and ins[2] is not None else 0
        axis = _attrs(node).get('axis', 1)
        if isinstance(x, np.ndarray):
            return _fold(node, ins)
        qparams = QParams.of(scale, zero_point,
                             axis if np.ndim(scale) else 0)
        if np.asarray(zero_point).dtype != np.int8:
            self.unsupported(node, 'LiteRT activations are int8, got '
                             f'{np.asarray(zero_point).dtype}')
        if not qparams.per_tensor:
            self.unsupported(node, 'activations are quantized per tensor')
        name = self.layer_name(node.input[1])
        if isinstance(x, _GraphInput):
            if self.out.inputs:
                self.unsupported(node, 'the model input is quantized twice')
            index = self.new_tensor(x.name, x.shape, qparams)
            self.out.inputs.append(index)
            return QValue(index, x.shape, qparams)
        if isinstance(x, QValue):
            return self.requantize(x, qparams, name)
        if isinstance(x, Pending):
            return self.emit(x, qparams, name)
        self.unsupported(node, f'cannot quantize {type(x).__name__}')

    def dequantize(self, node, ins):
        x, scale = ins[0], ins[1]
        zero_point = ins[2] if len(ins) > 2 and ins[2] is not None else \
            np.zeros_like(scale, dtype=np.int8)
        if isinstance(x, QValue):
            return x
        if isinstance(x, np.ndarray):
            axis = _attrs(node).get('axis', 1) if np.ndim(scale) else None
            if axis is not None and axis < 0:
                axis += x.ndim
            return QConst(x, np.atleast_1d(scale).astype(np.float32),
                          np.atleast_1d(zero_point), axis,
                          self.layer_name(node.input[1]))
        self.unsupported(node, 'dequantizes a float tensor')

    # -- shape ops on int8 tensors -----------------------------------------
    def shape_op(self, node, ins):
        op, x = node.op_type, ins[0]
        if isinstance(x, QConst):
            if op != 'Transpose':
                self.unsupported(node, 'reshapes a weight')
            perm = _attrs(node).get('perm',
                                    list(reversed(range(x.values.ndim))))
            return x.transposed(perm)
        x = self.layout(x, False)
        shape = self.shapes[node.output[0]]
        name = node.output[0]
        index = self.new_tensor(name, shape, x.qparams)
        if op == 'Transpose':
            perm = _attrs(node)['perm']
            self.out.add_op('TRANSPOSE',
                            [x.index, self.const_int32('perm', perm)],
                            [index], version=2)
        elif op == 'Gather':
            axis = _attrs(node).get('axis', 0)
            indices = np.asarray(ins[1])
            self.out.add_op('GATHER', [x.index,
                                       self.const_int32('indices', indices)],
                            [index], version=2, options='GatherOptions',
                            Axis=axis % len(x.shape))
        else:  # a reshape
            self.out.add_op('RESHAPE',
                            [x.index, self.const_int32('shape', shape)],
                            [index])
        return QValue(index, shape, x.qparams)

    # -- compute ops: recorded, written at their QuantizeLinear -------------
    def compute(self, node, ins):
        op = node.op_type
        attrs = _attrs(node)
        x = ins[0]
        if op == 'Conv' and isinstance(x, QValue) and \
                isinstance(ins[1], QConst):
            return Pending('conv', node, ins, attrs)
        if op == 'Gemm' and isinstance(x, QValue) and \
                isinstance(ins[1], QConst):
            if attrs.get('transA', 0) or attrs.get('alpha', 1.0) != 1.0 or \
                    attrs.get('beta', 1.0) != 1.0:
                self.unsupported(node, 'only Gemm(x, W^T) + b is mapped')
            weight = ins[1] if attrs.get('transB', 0) else \
                ins[1].transposed((1, 0))
            return Pending('fc', node, [x, weight, _opt(ins, 2)])
        if op == 'MatMul' and isinstance(x, QValue):
            if isinstance(ins[1], QConst) and ins[1].values.ndim == 2:
                return Pending('fc', node, [x, ins[1].transposed((1, 0)),
                                            None])
            if isinstance(ins[1], QValue):
                return Pending('batch_matmul', node, ins,
                               dict(float='MatMul' in self.float_ops))
        if op == 'Add':
            fc = next((v for v in ins if isinstance(v, Pending)
                       and v.kind == 'fc' and v.inputs[2] is None), None)
            bias = next((v for v in ins if isinstance(v, np.ndarray)), None)
            if fc is not None and bias is not None and bias.ndim == 1:
                fc.inputs[2] = bias
                return fc
        if op in ('Add', 'Sub', 'Mul') and all(
                isinstance(v, (QValue, QConst, np.ndarray)) for v in ins) \
                and any(isinstance(v, QValue) for v in ins):
            return Pending(op.lower(), node, ins)
        if op in ('Relu', 'Clip'):
            return self.activation(node, ins)
        if op == 'GlobalAveragePool' and isinstance(x, QValue):
            return Pending('mean', node, ins)
        if op == 'AveragePool' and isinstance(x, QValue):
            return Pending('avgpool', node, ins, attrs)
        if op == 'MaxPool' and isinstance(x, QValue):
            return self.maxpool(node, x, attrs)
        if op == 'Softmax':
            return self.softmax(node, x, attrs)
        if op == 'Gelu' and isinstance(x, QValue):
            approximate = attrs.get('approximate', 'none')
            approximate = approximate.decode() if isinstance(
                approximate, bytes) else approximate
            return Pending('gelu', node, ins,
                           dict(approximate=approximate == 'tanh'))
        if op == 'Concat':
            return Pending('concat', node, ins, attrs)
        if op in self.float_ops and op == 'LayerNormalization' and \
                isinstance(x, QValue):
            return Pending('layernorm', node, ins, attrs)
        if op == 'LayerNormalization':
            self.unsupported(node, 'LiteRT has no int8 LayerNorm kernel '
                             "(allow it in float with float_ops="
                             "('LayerNormalization',))")
        if op in SUPPORTED_OPS:
            self.unsupported(node, 'its inputs are not int8 tensors '
                             '(a fake quant is missing before it)')
        self.unsupported(node, f'no int8 TFLite kernel is mapped for it '
                         f'(mapped: {", ".join(SUPPORTED_OPS)})')

    def activation(self, node, ins):
        x = ins[0]
        if node.op_type == 'Relu':
            kind = 'RELU'
        else:
            low = None if _opt(ins, 1) is None else float(ins[1])
            high = None if _opt(ins, 2) is None else float(ins[2])
            kind = {(0.0, 6.0): 'RELU6', (0.0, None): 'RELU',
                    (-1.0, 1.0): 'RELU_N1_TO_1'}.get((low, high))
            if kind is None:
                self.unsupported(node, f'clip to [{low}, {high}] is not a '
                                 'TFLite fused activation')
        if isinstance(x, Pending) and x.kind in _FUSES_ACTIVATION and \
                x.activation == 'NONE':
            x.activation = kind
            return x
        self.unsupported(node, 'it follows an op that cannot fuse it')

    def maxpool(self, node, x: QValue, attrs) -> QValue:
        x = self.layout(x, True)
        padding = _padding(x, attrs, self.shapes[node.output[0]])
        if padding not in ('SAME', 'VALID'):
            self.unsupported(node, f'max pooling pads {attrs.get("pads")}')
        shape = _tflite_shape(self.shapes[node.output[0]], True)
        index = self.new_tensor(node.output[0], shape, x.qparams)
        kh, kw = attrs['kernel_shape']
        sh, sw = attrs.get('strides', [1, 1])
        self.out.add_op('MAX_POOL_2D', [x.index], [index], version=2,
                        options='Pool2DOptions', Padding=_pad_code(padding),
                        StrideW=sw, StrideH=sh, FilterWidth=kw,
                        FilterHeight=kh)
        return QValue(index, self.shapes[node.output[0]], x.qparams, True)

    def softmax(self, node, x, attrs):
        beta = 1.0
        if isinstance(x, Pending) and x.kind == 'mul':
            scalar = [v for v in x.inputs if isinstance(v, np.ndarray)]
            tensor = [v for v in x.inputs if isinstance(v, QValue)]
            if len(scalar) == 1 and scalar[0].size == 1 and tensor:
                beta, x = float(scalar[0]), tensor[0]
        if not isinstance(x, QValue):
            self.unsupported(node, 'its input is not an int8 tensor')
        axis = attrs.get('axis', -1)
        if axis not in (-1, len(x.shape) - 1):
            self.unsupported(node, f'softmax over axis {axis} (TFLite: the '
                             'last axis)')
        return Pending('softmax', node, [x], dict(beta=beta))

    # -- writing ops ------------------------------------------------------
    def emit(self, p: Pending, qparams: QParams, name: str) -> QValue:
        shape = self.shapes[p.node.output[0]]
        writer = getattr(self, f'_emit_{p.kind}')
        return writer(p, qparams, name, shape)

    def _output(self, name, shape, qparams, nhwc=False, dtype=np.int8):
        index = self.new_tensor(name, _tflite_shape(shape, nhwc), qparams,
                                dtype)
        return index, QValue(index, shape, qparams, nhwc)

    def _weights(self, p: Pending, w: QConst) -> None:
        if np.any(w.zero_point != 0):
            self.unsupported(p.node, 'weights must have zero-point 0')
        if w.values.dtype != np.int8:
            self.unsupported(p.node, f'weights are {w.values.dtype}, not '
                             'int8')

    def _bias(self, name, bias, x: QValue, w: QConst, channels: int) -> int:
        scale = np.float64(x.qparams.scale[0]) * np.broadcast_to(
            w.scale.astype(np.float64), (channels, ))
        bias = np.zeros(channels) if bias is None else np.asarray(
            bias, dtype=np.float64)
        q = np.clip(np.rint(bias / scale), _INT32.min, _INT32.max)
        return self.out.add_tensor(
            name + '_bias', (channels, ), np.int32,
            QParams.of(scale, np.zeros(channels, dtype=np.int64)), q)

    def _weight_qparams(self, w: QConst, axis: int, channels: int):
        scale = np.broadcast_to(w.scale, (channels, ))
        return QParams.of(scale, np.zeros(channels, dtype=np.int64), axis)

    def _emit_conv(self, p, qparams, name, shape):
        x, w = self.layout(p.inputs[0], True), p.inputs[1]
        self._weights(p, w)
        attrs = p.attrs
        group = attrs.get('group', 1)
        out_ch, in_per_group = w.values.shape[:2]
        in_ch = x.shape[1]
        depthwise = group > 1 and group == in_ch and in_per_group == 1
        if group > 1 and not depthwise:
            self.unsupported(p.node, f'grouped conv (group={group}) is not '
                             'depthwise')
        if depthwise:  # [O, 1, kh, kw] -> [1, kh, kw, O]
            values, axis, code, version, options = \
                w.values.transpose(1, 2, 3, 0), 3, 'DEPTHWISE_CONV_2D', 3, \
                'DepthwiseConv2DOptions'
        else:  # [O, I, kh, kw] -> OHWI
            values, axis, code, version, options = \
                w.values.transpose(0, 2, 3, 1), 0, 'CONV_2D', 3, \
                'Conv2DOptions'
        weight = self.const_int8(name + '_weight', values,
                                 self._weight_qparams(w, axis, out_ch))
        bias = self._bias(name, _opt(p.inputs, 2), x, w, out_ch)
        padding = _padding(x, attrs, shape)
        if padding not in ('SAME', 'VALID'):
            x = self._pad(x, padding, name)
            padding = 'VALID'
        index, out = self._output(name, shape, qparams, nhwc=True)
        sh, sw = attrs.get('strides', [1, 1])
        dh, dw = attrs.get('dilations', [1, 1])
        extra = dict(DepthMultiplier=out_ch // in_ch) if depthwise else {}
        self.out.add_op(code, [x.index, weight, bias], [index],
                        version=version, options=options,
                        Padding=_pad_code(padding), StrideW=sw, StrideH=sh,
                        DilationWFactor=dw, DilationHFactor=dh,
                        FusedActivationFunction=_act_code(p.activation),
                        **extra)
        return out

    def _pad(self, x: QValue, pads, name) -> QValue:
        top, left, bottom, right = pads
        n, c, h, w = x.shape
        shape = (n, c, h + top + bottom, w + left + right)
        index = self.new_tensor(name + '_pad', _tflite_shape(shape, True),
                                x.qparams)
        paddings = [[0, 0], [top, bottom], [left, right], [0, 0]]
        # int8 PAD fills with the zero-point: the value 0.0, as ONNX pads
        self.out.add_op('PAD', [x.index, self.const_int32('paddings',
                                                          paddings)],
                        [index], version=2)
        return QValue(index, shape, x.qparams, True)

    def _emit_fc(self, p, qparams, name, shape):
        x, w, bias = p.inputs
        x = self.layout(x, False)
        self._weights(p, w)
        out_ch = w.values.shape[0]
        weight = self.const_int8(name + '_weight', w.values,
                                 self._weight_qparams(w, 0, out_ch))
        bias_index = self._bias(name, bias, x, w, out_ch)
        index, out = self._output(name, shape, qparams)
        self.out.add_op('FULLY_CONNECTED', [x.index, weight, bias_index],
                        [index], version=5, options='FullyConnectedOptions',
                        FusedActivationFunction=_act_code(p.activation),
                        KeepNumDims=len(x.shape) > 2)
        return out

    def _elementwise_inputs(self, p, name) -> Tuple[List[QValue], bool]:
        tensors = [v for v in p.inputs if isinstance(v, QValue)]
        nhwc = len(tensors[0].shape) == 4 and all(
            v.nhwc for v in tensors)
        inputs = []
        for i, v in enumerate(p.inputs):
            if isinstance(v, QValue):
                inputs.append(self.layout(v, nhwc))
            elif isinstance(v, QConst):
                inputs.append(self.int8_operand(v, nhwc))
            else:
                const = v if not nhwc or np.ndim(v) != 4 else \
                    v.transpose(_NCHW_TO_NHWC)
                inputs.append(self.quantized_const(const, f'{name}_const{i}'))
        return inputs, nhwc

    def _emit_binary(self, p, qparams, name, shape, code, options):
        inputs, nhwc = self._elementwise_inputs(p, name)
        index, out = self._output(name, shape, qparams, nhwc)
        self.out.add_op(code, [v.index for v in inputs], [index], version=2,
                        options=options,
                        FusedActivationFunction=_act_code(p.activation))
        return out

    def _emit_add(self, p, qparams, name, shape):
        return self._emit_binary(p, qparams, name, shape, 'ADD', 'AddOptions')

    def _emit_sub(self, p, qparams, name, shape):
        return self._emit_binary(p, qparams, name, shape, 'SUB', 'SubOptions')

    def _emit_mul(self, p, qparams, name, shape):
        return self._emit_binary(p, qparams, name, shape, 'MUL', 'MulOptions')

    def _emit_mean(self, p, qparams, name, shape):
        x = self.layout(p.inputs[0], True)
        index, out = self._output(name, shape, qparams, nhwc=True)
        self.out.add_op('MEAN', [x.index, self.const_int32('axes', [1, 2])],
                        [index], version=2, options='ReducerOptions',
                        KeepDims=True)
        return out

    def _emit_avgpool(self, p, qparams, name, shape):
        x = self.layout(p.inputs[0], True)
        if qparams != x.qparams:
            self.unsupported(p.node, 'AVERAGE_POOL_2D keeps its input\'s '
                             'scale and zero-point (the output has others)')
        attrs = p.attrs
        padding = _padding(x, attrs, shape)
        if padding not in ('SAME', 'VALID'):
            self.unsupported(p.node, f'average pooling pads '
                             f'{attrs.get("pads")}')
        kh, kw = attrs['kernel_shape']
        sh, sw = attrs.get('strides', [1, 1])
        index, out = self._output(name, shape, qparams, nhwc=True)
        self.out.add_op('AVERAGE_POOL_2D', [x.index], [index], version=2,
                        options='Pool2DOptions', Padding=_pad_code(padding),
                        StrideW=sw, StrideH=sh, FilterWidth=kw,
                        FilterHeight=kh,
                        FusedActivationFunction=_act_code(p.activation))
        return out

    def _emit_softmax(self, p, qparams, name, shape):
        expected = QParams.of(*SOFTMAX_QPARAMS)
        if qparams != expected:
            self.unsupported(p.node, 'the TFLite int8 softmax outputs on '
                             f'scale 1/256, zero-point -128, got {qparams}')
        x = self.layout(p.inputs[0], False)
        index, out = self._output(name, shape, qparams)
        self.out.add_op('SOFTMAX', [x.index], [index], version=2,
                        options='SoftmaxOptions', Beta=p.attrs['beta'])
        return out

    def _emit_gelu(self, p, qparams, name, shape):
        x = self.layout(p.inputs[0], False)
        index, out = self._output(name, shape, qparams)
        self.out.add_op('GELU', [x.index], [index], version=2,
                        options='GeluOptions',
                        Approximate=p.attrs['approximate'])
        return out

    def _emit_batch_matmul(self, p, qparams, name, shape):
        a, b = (self.layout(v, False) for v in p.inputs)
        if p.attrs['float']:  # DEQUANTIZE both, float32, QUANTIZE
            a_f, b_f, y_f = (
                self.new_tensor(f'{name}_{tag}', tshape, None, np.float32)
                for tag, tshape in (('a', a.shape), ('b', b.shape),
                                    ('float', shape)))
            self.out.add_op('DEQUANTIZE', [a.index], [a_f])
            self.out.add_op('DEQUANTIZE', [b.index], [b_f])
            inputs, output = [a_f, b_f], y_f
        else:
            inputs, output = [a.index, b.index], None
        index, out = self._output(name, shape, qparams)
        self.out.add_op('BATCH_MATMUL', inputs, [output or index],
                        version=1 if output else 2,
                        options='BatchMatMulOptions', AdjX=False, AdjY=False)
        if output is not None:
            self.out.add_op('QUANTIZE', [output], [index])
        return out

    def _emit_concat(self, p, qparams, name, shape):
        axis = p.attrs.get('axis', 0) % len(shape)
        inputs = []
        for i, v in enumerate(p.inputs):
            if isinstance(v, QValue):
                # the spec: every input on the output's grid
                v = self.requantize(self.layout(v, False), qparams,
                                    f'{name}_in{i}')
            elif isinstance(v, np.ndarray):
                v = self.quantized_const(v, f'{name}_const{i}', qparams)
            else:
                self.unsupported(p.node, 'an input is not an int8 tensor')
            inputs.append(v)
        index, out = self._output(name, shape, qparams)
        self.out.add_op('CONCATENATION', [v.index for v in inputs], [index],
                        version=2, options='ConcatenationOptions', Axis=axis,
                        FusedActivationFunction=_act_code(p.activation))
        return out

    def _emit_layernorm(self, p, qparams, name, shape):
        """LayerNorm over the last axis in float32, between DEQUANTIZE and
        QUANTIZE: mean, centre, variance, rsqrt, scale and shift."""
        x = self.layout(p.inputs[0], False)
        gamma, beta = _opt(p.inputs, 1), _opt(p.inputs, 2)
        axis = p.attrs.get('axis', -1)
        if axis not in (-1, len(x.shape) - 1):
            self.unsupported(p.node, 'LayerNorm over other than the last '
                             'axis')
        eps = float(p.attrs.get('epsilon', 1e-5))

        def f32(tag, tshape=shape):
            return self.new_tensor(f'{name}_{tag}', tshape, None, np.float32)

        def const(tag, values):
            return self.out.add_tensor(f'{name}_{tag}', np.shape(values),
                                       np.float32, None,
                                       np.asarray(values, np.float32))

        reduced = tuple(shape[:-1]) + (1, )
        axes = self.const_int32('axes', [len(shape) - 1])
        xf, mean, centred, var, std_inv, normed = (
            f32('float'), f32('mean', reduced), f32('centred'),
            f32('var', reduced), f32('rsqrt', reduced), f32('normed'))
        sq, var_eps = f32('squared'), f32('var_eps', reduced)
        ops = [('DEQUANTIZE', [x.index], xf, None, {}),
               ('MEAN', [xf, axes], mean, 'ReducerOptions',
                dict(KeepDims=True)),
               ('SUB', [xf, mean], centred, 'SubOptions', {}),
               ('MUL', [centred, centred], sq, 'MulOptions', {}),
               ('MEAN', [sq, axes], var, 'ReducerOptions',
                dict(KeepDims=True)),
               ('ADD', [var, const('eps', [eps])], var_eps, 'AddOptions', {}),
               ('RSQRT', [var_eps], std_inv, None, {}),
               ('MUL', [centred, std_inv], normed, 'MulOptions', {})]
        last = normed
        if gamma is not None:
            scaled = f32('scaled')
            ops.append(('MUL', [last, const('gamma', gamma)], scaled,
                        'MulOptions', {}))
            last = scaled
        if beta is not None:
            shifted = f32('shifted')
            ops.append(('ADD', [last, const('beta', beta)], shifted,
                        'AddOptions', {}))
            last = shifted
        for code, inputs, output, options, values in ops:
            self.out.add_op(code, inputs, [output], options=options,
                            **values)
        index, out = self._output(name, shape, qparams)
        self.out.add_op('QUANTIZE', [last], [index])
        return out


def _opt(values: list, i: int):
    return values[i] if len(values) > i else None


def _tflite_shape(shape: Sequence[int], nhwc: bool) -> Tuple[int, ...]:
    shape = tuple(shape)
    if nhwc and len(shape) == 4:
        return tuple(shape[i] for i in _NCHW_TO_NHWC)
    return shape


def _padding(x: QValue, attrs: dict, out_shape: Sequence[int]):
    """``'VALID'``, ``'SAME'`` (TFLite's split of the padding) or the
    explicit ``(top, left, bottom, right)`` pads."""
    if attrs.get('auto_pad', 'NOTSET') not in ('NOTSET', b'NOTSET'):
        raise UnsupportedOpError(f'auto_pad={attrs["auto_pad"]} is not '
                                 'mapped')
    pads = list(attrs.get('pads', [0, 0, 0, 0]))
    if not any(pads):
        return 'VALID'
    top, left, bottom, right = pads
    kernel = attrs['kernel_shape']
    strides = attrs.get('strides', [1, 1])
    dilations = attrs.get('dilations', [1, 1])
    same = []
    for i, size in enumerate(x.shape[2:]):
        out = -(-size // strides[i])
        effective = (kernel[i] - 1) * dilations[i] + 1
        total = max((out - 1) * strides[i] + effective - size, 0)
        same.append((total // 2, total - total // 2, out))
    if (top, bottom) == same[0][:2] and (left, right) == same[1][:2] and \
            tuple(out_shape[2:]) == (same[0][2], same[1][2]):
        return 'SAME'
    return (top, left, bottom, right)


def _pad_code(padding: str) -> int:
    return getattr(schema_module('Padding').Padding, padding)


def _act_code(activation: str) -> int:
    codes = schema_module('ActivationFunctionType').ActivationFunctionType
    return getattr(codes, activation)


def _fold(node: onnx.NodeProto, ins: list) -> np.ndarray:
    """Evaluate a node of constants (shape arithmetic, a weight's
    QuantizeLinear: half to even, as the simulation)."""
    from onnx.reference import ReferenceEvaluator
    feeds = {name: value for name, value in zip(node.input, ins) if name}
    return ReferenceEvaluator(node).run(None, feeds)[0]


def convert_qdq_onnx(model: onnx.ModelProto,
                     float_ops: Sequence[str] = ('LayerNormalization', ),
                     layer_name: Optional[Callable[[str], str]] = None
                     ) -> TFLiteGraph:
    """The int8 TFLite graph of a QDQ ONNX model with static shapes.

    Args:
        model (onnx.ModelProto): A QDQ model with static shapes (not
            modified).
        float_ops (Sequence[str]): ONNX ops run in float32 between
            DEQUANTIZE and QUANTIZE: ``'LayerNormalization'`` (allowed,
            else refused) and ``'MatMul'`` (of two activations, instead of
            the int8 BATCH_MATMUL). Defaults to ``('LayerNormalization',)``,
            the one op of a ViT without an int8 TFLite kernel.
        layer_name (callable, optional): Maps the name of a
            ``QuantizeLinear`` scale to the layer it quantizes, for tensor
            names and messages. Defaults to the scale's name.

    Returns:
        TFLiteGraph: The graph, ready to serialize.

    Raises:
        UnsupportedOpError: If an op cannot run in int8 (named with its
            node and layer), or the model's input or output is float.
    """
    shapes = _tensor_shapes(model)
    model = onnx.ModelProto.FromString(model.SerializeToString())
    _fuse_gelu(model)
    return _Converter(model, float_ops, layer_name or (lambda n: n),
                      shapes).run()
