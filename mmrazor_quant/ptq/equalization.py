r"""Cross-layer equalization (Nagel et al., 2019, "Data-Free Quantization
Through Weight Equalization and Bias Correction", sec. 4.1).

For two layers where channel :math:`i` of the first feeds only channel
:math:`i` of the second through a positively homogeneous function
(identity, ReLU: :math:`f(x/s) = f(x)/s` for :math:`s > 0`), with
:math:`r^{(1)}_i` the range of output channel :math:`i` of the first weight
(BN folded) and :math:`r^{(2)}_i` that of input channel :math:`i` of the
second:

.. math::

    s_i = \sqrt{r^{(1)}_i / r^{(2)}_i}, \qquad
    W^{(1)}_{i,\cdot} \leftarrow W^{(1)}_{i,\cdot} / s_i, \quad
    b^{(1)}_i \leftarrow b^{(1)}_i / s_i, \quad
    W^{(2)}_{\cdot,i} \leftarrow s_i W^{(2)}_{\cdot,i}

leaves the float function unchanged and gives both channels the range
:math:`\sqrt{r^{(1)}_i r^{(2)}_i}`, which per-tensor (and low-bit
per-channel) grids represent better. Depthwise and grouped convs are
handled through their group structure.
"""
from typing import Dict, List, Optional, Tuple

import torch
import torch.nn.functional as F
from mmengine.logging import MMLogger
from torch import Tensor, fx, nn

from mmrazor_quant.models.fake_quants import BaseFakeQuantize
from mmrazor_quant.models.qat_modules import is_qat_module
from mmrazor_quant.models.utils import tensor_graph_module
from mmrazor_quant.registry import TASK_UTILS
from .graph_utils import weighted_nodes

__all__ = ['equalize_cross_layer', 'find_equalization_pairs',
           'output_channel_ranges']

_HOMOGENEOUS_MODULES = (nn.ReLU, nn.Identity, nn.Dropout, BaseFakeQuantize)
_HOMOGENEOUS_FUNCTIONS = (F.relu, torch.relu)


def _passes_scale(node: fx.Node, modules: Dict[str, nn.Module],
                  relu6_as_relu: bool) -> bool:
    """Whether ``node`` commutes with a positive per-channel scale.

    Activation fake quants count: equalization runs before calibration,
    where they are identities in float.
    """
    if node.op == 'call_module':
        module = modules.get(str(node.target))
        if relu6_as_relu and isinstance(module, nn.ReLU6):
            return True
        return isinstance(module, _HOMOGENEOUS_MODULES)
    if node.op == 'call_function':
        return node.target in _HOMOGENEOUS_FUNCTIONS
    return node.op == 'call_method' and node.target in ('relu', 'relu_')


def _is_conv_or_linear(module: nn.Module) -> bool:
    """A conv or linear whose weight is ``(out, in, ...)``; a transposed
    conv's is ``(in, out, ...)``, which the scaling here does not follow,
    so it is never equalized."""
    return isinstance(module, (nn.Linear, nn.modules.conv._ConvNd)) and \
        not isinstance(module, nn.modules.conv._ConvTransposeNd)


def find_equalization_pairs(gm: fx.GraphModule,
                            relu6_as_relu: bool = False
                            ) -> List[Tuple[str, str]]:
    """``(first, second)`` module names that can be equalized: the first
    layer's output reaches only the second, through nodes that commute with
    a positive scale."""
    modules = dict(gm.named_modules())
    pairs = []
    for node in weighted_nodes(gm):
        if not _is_conv_or_linear(modules[str(node.target)]):
            continue
        current = node
        while len(current.users) == 1:
            user = next(iter(current.users))
            target = modules.get(str(user.target)) \
                if user.op == 'call_module' else None
            if is_qat_module(target) and \
                    _is_conv_or_linear(target) and user.args[0] is current:
                pairs.append((str(node.target), str(user.target)))
                break
            if not _passes_scale(user, modules, relu6_as_relu):
                break
            current = user
    return pairs


def _folded_weight(module: nn.Module) -> Tensor:
    return module.get_folded_weight_bias()[0]


def output_channel_ranges(module: nn.Module) -> Tensor:
    """``max |W_i|`` of each output channel of the BN-folded weight."""
    return _folded_weight(module).abs().flatten(1).amax(1)


def _input_channel_index(module: nn.Module) -> Tensor:
    """For each weight element of ``W[o, l, ...]``, the input channel it
    reads: ``(o // out_per_group) * in_per_group + l``."""
    weight = module.weight
    groups = getattr(module, 'groups', 1)
    out_channels, in_per_group = weight.shape[:2]
    out_per_group = out_channels // groups
    group = torch.arange(out_channels) // out_per_group
    index = group[:, None] * in_per_group + torch.arange(in_per_group)
    return index.reshape(index.shape + (1, ) * (weight.dim() - 2)).expand(
        weight.shape)


def _input_channel_ranges(module: nn.Module, num_channels: int) -> Tensor:
    index = _input_channel_index(module)
    ranges = torch.zeros(num_channels, dtype=module.weight.dtype)
    return ranges.scatter_reduce(0, index.reshape(-1),
                                 module.weight.detach().abs().reshape(-1),
                                 'amax')


@torch.no_grad()
def _scale_output_channels(module: nn.Module, inv_scale: Tensor) -> None:
    """Multiply output channel ``i`` (weight and bias) by ``inv_scale[i]``.

    A BN-fused layer scales its BN's affine parameters instead, which the
    folding carries to the weight and the bias.
    """
    bn: Optional[nn.Module] = getattr(module, 'bn', None)
    if bn is not None:
        bn.weight.mul_(inv_scale)
        bn.bias.mul_(inv_scale)
        return
    view = inv_scale.reshape([-1] + [1] * (module.weight.dim() - 1))
    module.weight.mul_(view)
    if module.bias is not None:
        module.bias.mul_(inv_scale)


@torch.no_grad()
def _scale_input_channels(module: nn.Module, scale: Tensor) -> None:
    module.weight.mul_(scale[_input_channel_index(module)])


@torch.no_grad()
def equalize_pair(first: nn.Module, second: nn.Module,
                  max_scale: float = 1e4) -> Tensor:
    r"""Equalize one pair in place; returns the scales :math:`s`."""
    r1 = output_channel_ranges(first)
    r2 = _input_channel_ranges(second, r1.numel())
    scale = torch.sqrt(r1 / r2)
    valid = (r1 > 0) & (r2 > 0) & torch.isfinite(scale)
    scale = torch.where(valid, scale, torch.ones_like(scale)).clamp(
        1 / max_scale, max_scale)
    _scale_output_channels(first, scale.reciprocal())
    _scale_input_channels(second, scale)
    return scale


@TASK_UTILS.register_module()
def equalize_cross_layer(model: nn.Module,
                         data=None,
                         iterations: int = 3,
                         relu6_as_relu: bool = False,
                         max_scale: float = 1e4) -> List[Tuple[str, str]]:
    r"""Cross-layer equalization of every eligible layer pair, in place.

    Runs **before calibration** (``stage = 'before_calibration'``): it
    changes the weights, so their qparams must be observed afterwards.
    Needs no data. Pairs are found on the graph (conv→conv, conv→ReLU→conv,
    depthwise included; an output that also feeds a residual ``add`` is not
    a pair). The sweep over all pairs is repeated ``iterations`` times, as
    chains of layers converge over a few sweeps.

    Args:
        model (nn.Module): An ``MMArchitectureQuant`` or GraphModule.
        data: Unused (the pass is data-free). Defaults to None.
        iterations (int): Sweeps over the pairs. Defaults to 3.
        relu6_as_relu (bool): Treat ReLU6 as ReLU, as DFQ does for
            MobileNetV2 (ReLU6 is not scale-equivariant: the float function
            changes where activations exceed 6). Defaults to False.
        max_scale (float): Bound of :math:`s` and :math:`1/s`. Defaults to
            1e4.

    Returns:
        list[tuple[str, str]]: The equalized pairs.
    """
    gm = tensor_graph_module(model)
    modules = dict(gm.named_modules())
    pairs = find_equalization_pairs(gm, relu6_as_relu)
    logger = MMLogger.get_current_instance()
    for _ in range(iterations):
        for first, second in pairs:
            equalize_pair(modules[first], modules[second], max_scale)
    logger.info(f'PTQ equalize_cross_layer: {len(pairs)} layer pairs, '
                f'{iterations} sweeps')
    return pairs


equalize_cross_layer.stage = 'before_calibration'
