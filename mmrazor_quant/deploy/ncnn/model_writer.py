"""A deploy model (``fx.GraphModule``) written as an ncnn ``.param`` and
``.bin``: the int8 layers with this project's scales, the rest in float32.

Each node of the graph becomes one ncnn layer (named after the module, or
the node for a function); a tensor read by several layers gets a
``Split``, as ncnn wants every blob consumed once. The layers written:

==========================================  ==============================
graph op                                    ncnn layer
==========================================  ==============================
quantized ``Conv2d`` (input fake quant)     ``Convolution`` /
                                            ``ConvolutionDepthWise``,
                                            ``8=1``: int8 weights, ``1/s_w``
                                            per channel, ``1/s_in``
quantized ``Linear``                        ``InnerProduct``, ``8=1``
a conv / linear whose input is float        the same layers in float32
ReLU, ReLU6 / hardtanh / clamp, SiLU,       ``ReLU``, ``Clip``, ``Swish``,
sigmoid, hardswish                          ``Sigmoid``, ``HardSwish``
``+`` / ``*`` of two tensors                ``BinaryOp`` (add / mul)
max / average pooling, global average       ``Pooling``
``torch.cat`` on channels                   ``Concat``
``flatten(1)``                              ``Flatten``
nearest upsampling                          ``Interp``
``view`` / ``reshape`` keeping the batch    ``Reshape`` (up to 4-d blobs)
``x[:, a:b, ...]`` (unit-step slices)       ``Crop`` (starts, ends, axes)
==========================================  ==============================

Anything else raises :class:`NCNNExportError` naming the layer.
"""
import operator
import struct
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np
import torch
import torch.nn.functional as F
from torch import fx, nn
from torch.fx.passes.shape_prop import ShapeProp

from ..exporters.base import check_backend_scheme
from ..qdq_fake_quantize import QDQFakeQuantize
from ..weight_quantized_layer import WeightQuantizedLayer
from .arithmetic import (
    int8_layer_inputs,
    integer_weight,
    ncnn_multiplier,
)

__all__ = ['NCNNExportError', 'NCNNLayer', 'NCNNModel', 'build_ncnn_model']

#: The first line of every ``.param``.
PARAM_MAGIC = 7767517
#: The tag before int8 weights in a ``.bin`` (ncnn's ``ModelBin``).
INT8_TAG = 0x000D4B38


class NCNNExportError(ValueError):
    """The model has an op or a quantization ncnn cannot run as written;
    the message names the layer."""


@dataclass
class NCNNLayer:
    """One line of the ``.param`` and its weights in the ``.bin``.

    Attributes:
        type (str): ncnn layer type (``Convolution``...).
        name (str): Layer name (the module's qualified name).
        bottoms (list[str]): Input blobs.
        tops (list[str]): Output blobs.
        params (dict): ``{id: value}``; a list value is an array param.
        weights (list[bytes]): Its data in the ``.bin``, in order.
        weight_scales (np.ndarray, optional): ncnn's per-channel weight
            multipliers of an int8 layer (for the table).
        input_scale (float, optional): ncnn's input multiplier of an int8
            layer (for the table).
    """
    type: str
    name: str
    bottoms: List[str]
    tops: List[str]
    params: Dict[int, object] = field(default_factory=dict)
    weights: List[bytes] = field(default_factory=list)
    weight_scales: Optional[np.ndarray] = None
    input_scale: Optional[np.float32] = None

    def param_line(self) -> str:
        parts = [f'{self.type:<24s}', f'{self.name:<32s}',
                 str(len(self.bottoms)), str(len(self.tops))]
        parts += self.bottoms + self.tops
        for key, value in self.params.items():
            if isinstance(value, (list, tuple)):
                items = ','.join(_format(v) for v in value)
                parts.append(f'{-23300 - key}={len(value)},{items}')
            else:
                parts.append(f'{key}={_format(value)}')
        return ' '.join(parts)


def _format(value) -> str:
    if isinstance(value, (bool, int, np.integer)):
        return str(int(value))
    # ncnn reads a float param with strtof: 9 significant digits round-trip
    return f'{float(np.float32(value)):.9e}'


@dataclass
class NCNNModel:
    """An ncnn model: layers in order, input and output blob names."""
    layers: List[NCNNLayer]
    inputs: List[str]
    outputs: List[str]

    def param_text(self) -> str:
        blobs = {b for layer in self.layers for b in layer.tops}
        lines = [str(PARAM_MAGIC), f'{len(self.layers)} {len(blobs)}']
        lines += [layer.param_line() for layer in self.layers]
        return '\n'.join(lines) + '\n'

    def bin_bytes(self) -> bytes:
        return b''.join(w for layer in self.layers for w in layer.weights)

    def int8_layers(self) -> List[NCNNLayer]:
        return [layer for layer in self.layers
                if layer.weight_scales is not None]

    def table_text(self) -> str:
        """The scales in ``ncnn2table``'s format: ``<layer>_param_0`` and
        the weight multipliers per output channel, then ``<layer>`` and
        the input multiplier, for every int8 layer."""
        int8 = self.int8_layers()
        lines = [f'{layer.name}_param_0 ' + ' '.join(
            _format(s) for s in layer.weight_scales) for layer in int8]
        lines += [f'{layer.name} {_format(layer.input_scale)}'
                  for layer in int8]
        return '\n'.join(lines) + '\n'


def _float_data(array: np.ndarray, tagged: bool) -> bytes:
    """float32 data as ``ModelBin.load`` reads it: a weight (type 0) has a
    4-byte zero flag before raw float32; a bias or scale (type 1) has
    none."""
    data = np.ascontiguousarray(array, dtype='<f4').tobytes()
    return (b'\0\0\0\0' + data) if tagged else data


def _int8_data(codes: np.ndarray) -> bytes:
    data = np.ascontiguousarray(codes, dtype=np.int8).tobytes()
    pad = (-len(data)) % 4
    return struct.pack('<I', INT8_TAG) + data + b'\0' * pad


class _Builder:
    """Walks the graph once, emitting layers."""

    def __init__(self, model: fx.GraphModule, int8: bool) -> None:
        self.model = model
        self.int8 = int8
        self.modules = dict(model.named_modules())
        self.layers: List[NCNNLayer] = []
        self.blob: Dict[fx.Node, str] = {}
        self.quantized = int8_layer_inputs(model)
        self.names: Dict[str, int] = {}
        self.sizes: set = set()

    # -- naming -----------------------------------------------------------
    def _layer_name(self, node: fx.Node) -> str:
        name = str(node.target) if node.op == 'call_module' else node.name
        name = name.replace(' ', '_') or node.name
        count = self.names.get(name, 0)
        self.names[name] = count + 1
        return name if count == 0 else f'{name}_{count}'

    def _emit(self, type_: str, node: fx.Node, bottoms: Sequence[fx.Node],
              params: Optional[Dict] = None, **kwargs) -> NCNNLayer:
        layer = NCNNLayer(type_, self._layer_name(node),
                          [self.blob[b] for b in bottoms], [node.name],
                          dict(params or {}), **kwargs)
        self.layers.append(layer)
        self.blob[node] = node.name
        return layer

    def _alias(self, node: fx.Node, src: fx.Node) -> None:
        self.blob[node] = self.blob[src]

    # -- graph ------------------------------------------------------------
    def build(self) -> NCNNModel:
        inputs, outputs = [], []
        for node in self.model.graph.nodes:
            if node.op == 'placeholder':
                if node.users:
                    inputs.append(self._input(node))
            elif node.op == 'output':
                outputs = [self.blob[n] for n in _flat_outputs(node.args[0])]
            elif node.op == 'get_attr':
                raise self._error(node, 'a constant tensor input')
            else:
                self._node(node)
        self._insert_splits()
        self._outputs_last(outputs)
        return NCNNModel(self.layers, inputs, outputs)

    def _outputs_last(self, outputs: List[str]) -> None:
        """Move the layers writing the model's outputs (which no layer
        reads) to the end, in the order of the outputs: a ``.param`` has
        no output list, so the runtime reads them in the order written."""
        read = {b for layer in self.layers for b in layer.bottoms}
        last = {blob: i for i, blob in enumerate(outputs) if blob not in read}
        tail = sorted((layer for layer in self.layers
                       if len(layer.tops) == 1 and layer.tops[0] in last),
                      key=lambda layer: last[layer.tops[0]])
        self.layers = [layer for layer in self.layers
                       if layer not in tail] + tail

    def _input(self, node: fx.Node) -> str:
        shape = node.meta.get('ncnn_shape')
        params = {}
        if shape is not None:  # (c, h, w)
            params = {0: shape[-1], 1: shape[-2], 2: shape[-3]}
        self._emit('Input', node, [], params)
        return node.name

    def _error(self, node: fx.Node, what: str) -> NCNNExportError:
        where = node.target if node.op == 'call_module' else node.name
        return NCNNExportError(
            f'ncnn: layer {where!s} ({what}) has no ncnn layer that runs it '
            'as the simulation does; ncnn runs Conv2d and Linear in int8 and '
            'ReLU, ReLU6/clamp, SiLU, sigmoid, hardswish, add, mul, pooling, '
            'concat, flatten, reshape, unit-step slices and nearest '
            'upsampling in float32')

    def _node(self, node: fx.Node) -> None:
        if node.op == 'call_module':
            module = self.modules[node.target]
            if isinstance(module, QDQFakeQuantize):
                return self._fake_quant(node, module)
            if isinstance(module, (WeightQuantizedLayer, nn.Conv2d,
                                   nn.Linear)):
                return self._weighted(node, module)
            return self._module(node, module)
        return self._function(node)

    def _fake_quant(self, node: fx.Node, fq: QDQFakeQuantize) -> None:
        readers = [u for u in node.users if u not in self.quantized]
        if readers:
            raise NCNNExportError(
                f'ncnn: {fq.name or node.target} quantizes the input of '
                f'{_describe(readers[0], self.modules)}, which ncnn cannot '
                'run in int8 (ncnn quantizes only the inputs of Conv2d and '
                'Linear); quantize the model with NCNNQuantizer')
        self._alias(node, node.args[0])

    def _weighted(self, node: fx.Node, module: nn.Module) -> None:
        quantized = self.quantized.get(node)
        if quantized is not None:
            bottom = quantized[0].args[0]
        else:
            bottom = node.args[0]
        layer = module.layer if isinstance(module,
                                           WeightQuantizedLayer) else module
        relu = isinstance(module, WeightQuantizedLayer) and module.with_relu
        if isinstance(layer, nn.Linear):
            type_, params = 'InnerProduct', {
                0: layer.out_features, 1: int(layer.bias is not None),
                2: layer.weight.numel()}
        elif isinstance(layer, nn.Conv2d):
            type_, params = self._conv_params(node, layer)
        else:
            raise self._error(node, type(layer).__name__)
        if relu:
            params[9] = 1
        weights, scales, in_scale = self._weight_data(node, module, layer,
                                                      quantized)
        if quantized is not None and self.int8:
            params[8] = 1
        fake = _AliasNode(node, bottom)
        self._emit(type_, fake, [bottom], params, weights=weights,
                   weight_scales=scales, input_scale=in_scale)
        self.blob[node] = self.blob[fake]

    def _conv_params(self, node: fx.Node, conv: nn.Conv2d
                     ) -> Tuple[str, Dict]:
        if conv.padding_mode != 'zeros' or isinstance(conv.padding, str):
            raise self._error(node, f'padding {conv.padding!r} '
                              f'{conv.padding_mode}')
        kh, kw = conv.kernel_size
        ph, pw = conv.padding
        params = {0: conv.out_channels, 1: kw, 11: kh,
                  2: conv.dilation[1], 12: conv.dilation[0],
                  3: conv.stride[1], 13: conv.stride[0],
                  4: pw, 15: pw, 14: ph, 16: ph,
                  5: int(conv.bias is not None),
                  6: conv.weight.numel()}
        if conv.groups == 1:
            return 'Convolution', params
        depthwise = conv.groups == conv.in_channels == conv.out_channels
        if not depthwise and node in self.quantized:
            raise NCNNExportError(
                f'ncnn: layer {node.target} is a grouped conv ({conv.groups} '
                f'groups, {conv.in_channels} -> {conv.out_channels} '
                'channels): ncnn\'s int8 ConvolutionDepthWise takes one '
                'weight scale per group, not per output channel; keep it '
                'float (qconfig_mapping module_name None)')
        params[7] = conv.groups
        return 'ConvolutionDepthWise', params

    def _weight_data(self, node, module, layer, quantized):
        bias = layer.bias
        if quantized is None or not self.int8:
            data = [_float_data(layer.weight.detach().numpy(), True)]
            if bias is not None:
                data.append(_float_data(bias.detach().numpy(), False))
            return data, None, None
        fq = module.weight_fake_quant
        _check_weight_axis(fq, node.target)
        codes = integer_weight(module).numpy()
        w_scales = ncnn_multiplier(fq.scale)
        in_scale = ncnn_multiplier(quantized[1].scale)
        data = [_int8_data(codes)]
        if bias is not None:
            data.append(_float_data(bias.detach().numpy(), False))
        data.append(_float_data(w_scales, False))
        data.append(_float_data(in_scale, False))
        return data, w_scales, in_scale[0]

    def _module(self, node: fx.Node, module: nn.Module) -> None:
        x = node.args[0]
        if isinstance(module, (nn.Identity, nn.Dropout)):
            return self._alias(node, x)
        if isinstance(module, nn.ReLU):
            return self._emit('ReLU', node, [x])
        if isinstance(module, (nn.ReLU6, nn.Hardtanh)):
            low, high = (0.0, 6.0) if isinstance(module, nn.ReLU6) else (
                module.min_val, module.max_val)
            return self._emit('Clip', node, [x], {0: low, 1: high})
        if isinstance(module, nn.SiLU):
            return self._emit('Swish', node, [x])
        if isinstance(module, nn.Sigmoid):
            return self._emit('Sigmoid', node, [x])
        if isinstance(module, nn.Hardswish):
            return self._emit('HardSwish', node, [x],
                              {0: 1.0 / 6.0, 1: 0.5})
        if isinstance(module, (nn.MaxPool2d, nn.AvgPool2d)):
            return self._pool(node, x, module)
        if isinstance(module, nn.AdaptiveAvgPool2d):
            return self._adaptive_avg(node, x, module.output_size)
        if isinstance(module, nn.Flatten):
            return self._flatten(node, x, module.start_dim, module.end_dim)
        if isinstance(module, nn.Upsample) and module.mode == 'nearest':
            return self._upsample(node, x, module.scale_factor)
        raise self._error(node, type(module).__name__)

    def _function(self, node: fx.Node) -> None:
        target = node.target
        args = node.args
        if self._shape_value(node):
            return None
        if target in (torch.reshape, ) or (node.op == 'call_method' and
                                           target in ('view', 'reshape')):
            return self._reshape(node)
        if target is operator.getitem:
            return self._slice(node)
        if target in (operator.add, torch.add, operator.mul, torch.mul) \
                or (node.op == 'call_method' and target in ('add', 'mul')):
            tensors = [a for a in args[:2] if isinstance(a, fx.Node)]
            if len(tensors) != 2 or node.kwargs:
                raise self._error(node, f'{_name(target)} with a constant')
            op = 0 if _name(target) in ('add', 'iadd') else 2
            return self._emit('BinaryOp', node, tensors, {0: op})
        if target in (F.relu, torch.relu) or (node.op == 'call_method'
                                              and target == 'relu'):
            return self._emit('ReLU', node, [args[0]])
        if target in (F.relu6, ):
            return self._emit('Clip', node, [args[0]], {0: 0.0, 1: 6.0})
        if target in (F.silu, ):
            return self._emit('Swish', node, [args[0]])
        if target in (torch.sigmoid, F.sigmoid) or (
                node.op == 'call_method' and target == 'sigmoid'):
            return self._emit('Sigmoid', node, [args[0]])
        if target in (torch.flatten, ) or (node.op == 'call_method'
                                           and target == 'flatten'):
            start = args[1] if len(args) > 1 else node.kwargs.get(
                'start_dim', 0 if target is torch.flatten else 0)
            end = args[2] if len(args) > 2 else node.kwargs.get('end_dim', -1)
            return self._flatten(node, args[0], start, end)
        if target in (F.adaptive_avg_pool2d, ):
            return self._adaptive_avg(node, args[0], args[1])
        if target in (torch.cat, ):
            tensors = args[0]
            dim = args[1] if len(args) > 1 else node.kwargs.get('dim', 0)
            if dim not in (1, -3):
                raise self._error(node, f'cat on dim {dim}')
            return self._emit('Concat', node, list(tensors), {0: 0})
        raise self._error(node, _name(target))

    def _shape_value(self, node: fx.Node) -> bool:
        """Whether ``node`` computes a size (``x.size(0)``, ``x.shape``
        and items of them), not a tensor: no layer, only :meth:`_reshape`
        reads it."""
        target = node.target
        sized = (node.op == 'call_method' and target in ('size', 'dim')) or (
            target is getattr and node.args[1] == 'shape') or (
                target is operator.getitem and isinstance(
                    node.args[0], fx.Node) and node.args[0] in self.sizes)
        if sized:
            self.sizes.add(node)
        return sized

    def _reshape(self, node: fx.Node) -> None:
        x, *shape = node.args
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = list(shape[0])
        batch = shape[0] if shape else None
        if len(shape) == 2 and shape[1] == -1 and (
                batch in self.sizes or isinstance(batch, int)):
            return self._emit('Flatten', node, [x])
        before, after = _shape_of(node.args[0]), _shape_of(node)
        if before is None or after is None or before[0] != after[0] or \
                not 2 <= len(after) <= 5:
            raise self._error(node, f'reshape to {shape}')
        # ncnn's Reshape lays the blob out row-major, as torch's view does
        ids = (0, 1, 2) if len(after) < 5 else (0, 1, 11, 2)  # w h (d) c
        dims = dict(zip(ids, reversed(after[1:])))
        self._emit('Reshape', node, [x], dims)

    def _slice(self, node: fx.Node) -> None:
        """``x[:, a:b, ...]``: basic slices of the axes after the batch, as
        one ``Crop`` with ``starts``/``ends``/``axes``."""
        x, index = node.args
        shape = _shape_of(x)
        index = index if isinstance(index, tuple) else (index, )
        if shape is None or Ellipsis in index[:-1] or any(
                not isinstance(i, (slice, type(Ellipsis))) for i in index):
            raise self._error(node, f'indexing with {index}')
        index = [i for i in index if i is not Ellipsis]
        starts, ends, axes = [], [], []
        for dim, item in enumerate(index):
            start, stop, step = item.indices(shape[dim])
            if step != 1 or (dim == 0 and (start, stop) != (0, shape[0])):
                raise self._error(node, f'indexing with {index}')
            if (start, stop) != (0, shape[dim]):
                starts.append(start)
                ends.append(stop)
                axes.append(dim - 1)
        if not axes:
            return self._alias(node, x)
        self._emit('Crop', node, [x], {9: starts, 10: ends, 11: axes})

    def _pool(self, node: fx.Node, x: fx.Node, pool: nn.Module) -> None:
        kh, kw = _pair(pool.kernel_size)
        sh, sw = _pair(pool.stride or pool.kernel_size)
        ph, pw = _pair(pool.padding)
        if getattr(pool, 'dilation', 1) not in (1, (1, 1)) or pool.ceil_mode:
            raise self._error(node, 'pooling with dilation or ceil_mode')
        avg = isinstance(pool, nn.AvgPool2d)
        params = {0: int(avg), 1: kw, 11: kh, 2: sw, 12: sh,
                  3: pw, 14: pw, 13: ph, 15: ph, 5: 1}
        if avg:
            if pool.divisor_override:
                raise self._error(node, 'average pooling with a divisor')
            params[6] = int(pool.count_include_pad)
        self._emit('Pooling', node, [x], params)

    def _adaptive_avg(self, node: fx.Node, x: fx.Node, size) -> None:
        if _pair(size) != (1, 1):
            raise self._error(node, f'adaptive average pooling to {size}')
        # ncnn's global pooling gives a 1-d blob: later flattens are no-ops
        self._emit('Pooling', node, [x], {0: 1, 4: 1})

    def _flatten(self, node: fx.Node, x: fx.Node, start: int,
                 end: int) -> None:
        if start != 1 or end != -1:
            raise self._error(node, f'flatten({start}, {end})')
        self._emit('Flatten', node, [x])

    def _upsample(self, node: fx.Node, x: fx.Node, factor) -> None:
        fh, fw = _pair(factor)
        self._emit('Interp', node, [x], {0: 1, 1: float(fh), 2: float(fw)})

    def _insert_splits(self) -> None:
        readers: Dict[str, List[Tuple[NCNNLayer, int]]] = {}
        for layer in self.layers:
            for i, blob in enumerate(layer.bottoms):
                readers.setdefault(blob, []).append((layer, i))
        out: List[NCNNLayer] = []
        for layer in self.layers:
            out.append(layer)
            for blob in layer.tops:
                users = readers.get(blob, [])
                if len(users) < 2:
                    continue
                tops = [f'{blob}_splitncnn_{i}' for i in range(len(users))]
                out.append(NCNNLayer('Split', f'splitncnn_{blob}', [blob],
                                     tops))
                for (reader, index), top in zip(users, tops):
                    reader.bottoms[index] = top
        self.layers = out


class _AliasNode:
    """A node stand-in whose name is the layer's output blob (the fx node
    of a conv after its input fake quant)."""

    def __init__(self, node: fx.Node, bottom: fx.Node) -> None:
        self.op, self.target, self.name = node.op, node.target, node.name

    def __hash__(self) -> int:
        return hash(self.name)


def _pair(value) -> Tuple[int, int]:
    return tuple(value) if isinstance(value, (tuple, list)) else (value,
                                                                  value)


def _shape_of(node) -> Optional[Tuple[int, ...]]:
    """The tensor shape shape propagation recorded for ``node``."""
    meta = node.meta.get('tensor_meta') if isinstance(node, fx.Node) else None
    return tuple(meta.shape) if hasattr(meta, 'shape') else None


def _name(target) -> str:
    return getattr(target, '__name__', str(target))


def _describe(node: fx.Node, modules: Dict[str, nn.Module]) -> str:
    if node.op == 'call_module':
        return f'{node.target} ({type(modules[node.target]).__name__})'
    return f'{node.name} ({_name(node.target)})'


def _flat_outputs(args) -> List[fx.Node]:
    if isinstance(args, fx.Node):
        return [args]
    if isinstance(args, dict):
        args = list(args.values())
    return [n for a in args for n in _flat_outputs(a)]


def _check_weight_axis(fq: QDQFakeQuantize, layer: str) -> None:
    """What ncnn's scheme (its ``BackendSpec``) cannot say: one weight scale
    per output channel, the first axis."""
    if fq.is_per_channel and fq.ch_axis != 0:
        raise NCNNExportError(f'ncnn: the weight of {layer} is quantized '
                              f'along axis {fq.ch_axis}; ncnn\'s scales are '
                              'per output channel')


def build_ncnn_model(model: fx.GraphModule, input_shape: Sequence[int],
                     int8: bool = True) -> NCNNModel:
    """The ncnn layers of the deploy model ``model``.

    Args:
        model (fx.GraphModule): A deploy model
            (:func:`~mmrazor_quant.deploy.build_deploy_model`).
        input_shape (Sequence[int]): One sample's ``(c, h, w)``, written
            into the ``Input`` layer.
        int8 (bool): Write the quantized layers in int8 with their scales;
            False writes every layer in float32 with the on-grid weights
            (the graph ``ncnn2int8`` takes with the ``.table``). Defaults
            to True.

    Raises:
        ValueError: If a fake quant's scheme is not one ncnn executes
            (:class:`NCNNQuantizer`'s ``BackendSpec``: symmetric int8 on
            ``[-127, 127]``, rounding half away from zero), naming each.
        NCNNExportError: If an op has no ncnn layer here; the message names
            the layer.
    """
    check_backend_scheme(model, 'ncnn')
    for node in model.graph.nodes:
        if node.op == 'placeholder' and node.users:
            node.meta['ncnn_shape'] = tuple(input_shape)
    # the shapes of one sample, for the layers that move data (Reshape,
    # Crop): ncnn's take them as numbers
    with torch.no_grad():
        ShapeProp(model).propagate(*[
            torch.zeros(1, *input_shape) if node.users else None
            for node in model.graph.nodes if node.op == 'placeholder'])
    return _Builder(model, int8).build()
