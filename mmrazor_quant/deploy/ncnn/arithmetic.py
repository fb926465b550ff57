"""ncnn's int8 arithmetic, in one place: the scales it stores and how its
int8 layers compute with them.

ncnn's scale is a multiplier, ``q = round(x * s_ncnn)``: the inverse of this
project's step ``s``. An int8 ``Convolution``, ``ConvolutionDepthWise`` or
``InnerProduct`` (``int8_scale_term=1``) computes, for a float32 input blob
``x``:

1. ``q_x = float2int8(x * s_in)``: the float32 product rounded half away
   from zero as ncnn's SIMD kernels do (``trunc(v + copysign(0.5, v))`` in
   float32), clamped to ``[-127, 127]``;
2. ``acc = sum(q_x * q_w)``, exactly, in int32;
3. ``y = float32(acc) * descale + bias`` with ``descale = 1 / (s_in *
   s_w[c])`` in float32 (computed when the model loads), then the fused
   activation; the output blob is float32.

:class:`NCNNInt8Layer` computes exactly that from the scales the exporter
writes; :func:`ncnn_deploy_model` puts one in place of every quantized
conv or linear of a deploy model, which is the simulation the ``ncnn``
runtime is compared with.
"""
import copy
from typing import Dict, Optional, Tuple

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, fx, nn

from ..qdq_fake_quantize import QDQFakeQuantize
from ..weight_quantized_layer import WeightQuantizedLayer
from .swish import NCNNSwish

__all__ = [
    'INT8_RANGE', 'ncnn_multiplier', 'float2int8', 'NCNNInt8Layer',
    'ncnn_deploy_model', 'int8_layer_inputs'
]

#: ncnn's int8 grid: symmetric, no zero-point.
INT8_RANGE = (-127, 127)


def ncnn_multiplier(scale: Tensor) -> np.ndarray:
    """The float32 values ncnn stores for this project's ``scale`` (the
    step): ``1 / scale``, the same float32 reciprocal the fake quants
    multiply by, so ``x * s_ncnn`` is the simulation's ``x * (1 / s)`` bit
    for bit."""
    return torch.reciprocal(scale.detach().float().reshape(-1)).numpy()


def float2int8(v: Tensor) -> Tensor:
    """ncnn's ``float2int8`` on float32 ``v``: ``trunc(v + copysign(0.5,
    v))`` computed in float32, clamped to ``[-127, 127]``.

    Ties go away from zero. The float32 sum differs from an exact rounding
    only just below one half (``0.49999997 + 0.5`` rounds to 1.0 in
    float32), where ncnn's SIMD kernels round up too.
    """
    half = torch.copysign(torch.full_like(v, 0.5), v)
    return torch.trunc(v + half).clamp_(*INT8_RANGE)


def integer_weight(layer: WeightQuantizedLayer) -> Tensor:
    """The int8 codes of a deploy layer's weight (stored on the grid, so
    ``w / s`` recovers them exactly)."""
    fq = layer.weight_fake_quant
    shape = [-1] + [1] * (layer.weight.dim() - 1)
    codes = torch.round(layer.weight.detach().float() /
                        fq.scale.reshape(shape))
    return codes.clamp_(*INT8_RANGE)


class NCNNInt8Layer(nn.Module):
    """A quantized conv or linear as ncnn's int8 layer computes it (see the
    module docstring), from the float input of its fake quant.

    Args:
        layer (WeightQuantizedLayer): The deploy layer (weight on the grid,
            folded bias, fused ReLU).
        input_fake_quant (QDQFakeQuantize): The fake quant of its input.
        activation (tuple, optional): A fused activation applied after the
            dequantization, ``('relu',)`` or ``('clip', low, high)``.
            Defaults to the layer's own ReLU, if any.
    """

    def __init__(self, layer: WeightQuantizedLayer,
                 input_fake_quant: QDQFakeQuantize,
                 activation: Optional[Tuple] = None) -> None:
        super().__init__()
        self.layer = layer.layer
        self.name = input_fake_quant.name
        self.register_buffer('weight_codes', integer_weight(layer).double())
        in_mult = ncnn_multiplier(input_fake_quant.scale)
        w_mult = ncnn_multiplier(layer.weight_fake_quant.scale)
        self.register_buffer('in_multiplier', torch.from_numpy(in_mult))
        # computed as ncnn does when it loads the model, in float32
        descale = np.float32(1.0) / (in_mult[0] * w_mult)
        self.register_buffer('descale',
                             torch.from_numpy(descale.astype(np.float32)))
        self.activation = activation or (('relu', ) if layer.with_relu
                                         else None)

    def forward(self, x: Tensor) -> Tensor:
        q = float2int8(x.float() * self.in_multiplier).double()
        if isinstance(self.layer, nn.Linear):
            acc = F.linear(q, self.weight_codes)
        else:
            acc = self.layer._conv_forward(q, self.weight_codes, None)
        shape = [1, -1] + [1] * (acc.dim() - 2)
        # float32(acc) * descale + bias, rounded once (a fused multiply-add)
        out = acc.float().double() * self.descale.double().reshape(shape)
        if self.layer.bias is not None:
            out = out + self.layer.bias.detach().double().reshape(shape)
        out = out.float()
        if self.activation is None:
            return out
        if self.activation[0] == 'relu':
            return F.relu(out)
        return out.clamp(self.activation[1], self.activation[2])


def int8_layer_inputs(model: fx.GraphModule
                      ) -> Dict[fx.Node, Tuple[fx.Node, QDQFakeQuantize]]:
    """``{layer node: (fake quant node, fake quant)}`` for every
    :class:`WeightQuantizedLayer` of ``model`` whose input is quantized:
    the layers ncnn runs in int8."""
    modules = dict(model.named_modules())
    found = {}
    for node in model.graph.nodes:
        if node.op != 'call_module' or not isinstance(
                modules[node.target], WeightQuantizedLayer):
            continue
        src = node.args[0]
        if isinstance(src, fx.Node) and src.op == 'call_module' and \
                isinstance(modules.get(src.target), QDQFakeQuantize):
            found[node] = (src, modules[src.target])
    return found


def ncnn_deploy_model(model: fx.GraphModule) -> fx.GraphModule:
    """A copy of the deploy model ``model`` computing as ncnn does: each
    conv or linear with a quantized input becomes an :class:`NCNNInt8Layer`
    that reads the float tensor and quantizes it itself; the fake quants
    only those layers read are dropped; each SiLU becomes an
    :class:`~.swish.NCNNSwish` (ncnn's ``Swish`` kernel of this CPU, on
    unpacked blobs). Every other op is unchanged (ncnn runs it in
    float32)."""
    model = copy.deepcopy(model)
    modules = dict(model.named_modules())
    for node, (src, fake_quant) in int8_layer_inputs(model).items():
        int8 = NCNNInt8Layer(modules[node.target], fake_quant)
        _replace_module(model, node.target, int8)
        node.replace_input_with(src, src.args[0])
    for node in list(model.graph.nodes):
        if node.op == 'call_module' and not node.users and isinstance(
                modules.get(node.target), QDQFakeQuantize):
            model.graph.erase_node(node)
    _swap_silu(model, modules)
    model.graph.lint()
    model.recompile()
    return model.eval()


def _swap_silu(model: fx.GraphModule, modules: Dict[str, nn.Module]
               ) -> None:
    """Put :class:`~.swish.NCNNSwish` in place of every SiLU module and
    ``F.silu`` call of ``model``."""
    for node in list(model.graph.nodes):
        if node.op == 'call_module' and isinstance(
                modules.get(node.target), nn.SiLU):
            _replace_module(model, node.target, NCNNSwish())
        elif node.op == 'call_function' and node.target is F.silu:
            name = f'ncnn_swish_{node.name}'
            model.add_module(name, NCNNSwish())
            with model.graph.inserting_after(node):
                swish = model.graph.call_module(name, (node.args[0], ))
            node.replace_all_uses_with(swish)
            model.graph.erase_node(node)


def _replace_module(root: nn.Module, target: str, module: nn.Module) -> None:
    parent, _, name = target.rpartition('.')
    setattr(root.get_submodule(parent) if parent else root, name, module)
