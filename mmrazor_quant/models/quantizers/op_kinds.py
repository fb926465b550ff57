"""Classify fx nodes into the op kinds that backend rule tables speak of."""
import operator
from typing import Dict, Optional

import torch
import torch.nn.functional as F
from torch import fx, nn

__all__ = ['OpKind', 'classify_node', 'is_weighted_conv', 'is_weighted_linear']


class OpKind:
    """Names of op kinds (plain strings so rule tables stay readable)."""
    INPUT = 'input'
    CONV = 'conv'
    LINEAR = 'linear'
    MATMUL = 'matmul'
    ADD = 'add'
    MUL = 'mul'
    CAT = 'cat'
    AVGPOOL = 'avgpool'
    MAXPOOL = 'maxpool'
    ACTIVATION = 'activation'
    #: ``x * sigmoid(x)`` (Swish / SiLU written out, as in mmcv's ``Swish``):
    #: an activation the backends fuse into the producing conv, not an
    #: eltwise product of two tensors; it does not keep a grid.
    SWISH = 'swish'
    SHAPE = 'shape'
    OTHER = 'other'


_ACTIVATION_MODULES = (nn.ReLU, nn.ReLU6, nn.Hardtanh, nn.LeakyReLU)
_ACTIVATION_FUNCTIONS = {
    F.relu, torch.relu, F.relu6, F.hardtanh, F.leaky_relu, torch.relu_,
    F.relu_
}
_ACTIVATION_METHODS = {'relu', 'relu_', 'clamp'}

_AVGPOOL_MODULES = (nn.AvgPool1d, nn.AvgPool2d, nn.AvgPool3d,
                    nn.AdaptiveAvgPool1d, nn.AdaptiveAvgPool2d,
                    nn.AdaptiveAvgPool3d)
_AVGPOOL_FUNCTIONS = {
    F.avg_pool1d, F.avg_pool2d, F.avg_pool3d, F.adaptive_avg_pool1d,
    F.adaptive_avg_pool2d, F.adaptive_avg_pool3d
}
_MAXPOOL_MODULES = (nn.MaxPool1d, nn.MaxPool2d, nn.MaxPool3d,
                    nn.AdaptiveMaxPool2d)
_MAXPOOL_FUNCTIONS = {F.max_pool1d, F.max_pool2d, F.max_pool3d}

# Ops that only move or reshape values: a quantized input stays quantized.
_SHAPE_MODULES = (nn.Flatten, nn.Dropout, nn.Identity, nn.Unflatten)
_SHAPE_FUNCTIONS = {
    torch.flatten, torch.reshape, operator.getitem, torch.transpose,
    torch.permute, F.dropout, torch.squeeze, torch.unsqueeze
}
_SHAPE_METHODS = {
    'view', 'reshape', 'flatten', 'permute', 'transpose', 'contiguous',
    'squeeze', 'unsqueeze', 'expand', 'size', 'chunk', 'split'
}

_ADD_FUNCTIONS = {operator.add, operator.iadd, torch.add}
_MUL_FUNCTIONS = {operator.mul, operator.imul, torch.mul}
_MATMUL_FUNCTIONS = {operator.matmul, torch.matmul, torch.bmm, torch.mm}
_CAT_FUNCTIONS = {torch.cat, torch.concat}


def is_weighted_conv(module: nn.Module) -> bool:
    """A float conv or a QAT conv (duck-typed on ``kernel_size``)."""
    return isinstance(module, nn.modules.conv._ConvNd) or (
        hasattr(module, 'weight_fake_quant')
        and hasattr(module, 'kernel_size'))


def is_weighted_linear(module: nn.Module) -> bool:
    """A float linear or a QAT linear (duck-typed on ``in_features``)."""
    return isinstance(module, nn.Linear) or (
        hasattr(module, 'weight_fake_quant')
        and hasattr(module, 'in_features'))


def _two_tensors(node: fx.Node) -> bool:
    return len(node.args) >= 2 and all(
        isinstance(a, fx.Node) for a in node.args[:2])


def _classify_module(module: nn.Module) -> str:
    if is_weighted_conv(module):
        return OpKind.CONV
    if is_weighted_linear(module):
        return OpKind.LINEAR
    if isinstance(module, nn.SiLU):
        return OpKind.SWISH
    if isinstance(module, _ACTIVATION_MODULES):
        return OpKind.ACTIVATION
    if isinstance(module, _AVGPOOL_MODULES):
        return OpKind.AVGPOOL
    if isinstance(module, _MAXPOOL_MODULES):
        return OpKind.MAXPOOL
    if isinstance(module, _SHAPE_MODULES):
        return OpKind.SHAPE
    return OpKind.OTHER


_SIGMOID_FUNCTIONS = {torch.sigmoid, F.sigmoid}


def _is_sigmoid_of(node: fx.Node, x: fx.Node) -> bool:
    return node.args[:1] == (x, ) and (
        (node.op == 'call_function' and node.target in _SIGMOID_FUNCTIONS)
        or (node.op == 'call_method' and node.target == 'sigmoid'))


def _mul_kind(node: fx.Node) -> str:
    """``mul`` of two tensors, or Swish when one is the other's sigmoid."""
    if not _two_tensors(node):
        return OpKind.OTHER
    a, b = node.args[:2]
    if _is_sigmoid_of(b, a) or _is_sigmoid_of(a, b):
        return OpKind.SWISH
    return OpKind.MUL


def _classify_function(node: fx.Node) -> str:
    target = node.target
    if target in _ADD_FUNCTIONS:
        return OpKind.ADD if _two_tensors(node) else OpKind.OTHER
    if target in _MUL_FUNCTIONS:
        return _mul_kind(node)
    if target is F.silu:
        return OpKind.SWISH
    if target in _MATMUL_FUNCTIONS:
        return OpKind.MATMUL
    if target in _CAT_FUNCTIONS:
        return OpKind.CAT
    if target in _ACTIVATION_FUNCTIONS:
        return OpKind.ACTIVATION
    if target in _AVGPOOL_FUNCTIONS:
        return OpKind.AVGPOOL
    if target in _MAXPOOL_FUNCTIONS:
        return OpKind.MAXPOOL
    if target in _SHAPE_FUNCTIONS:
        return OpKind.SHAPE
    if target is F.linear:
        return OpKind.OTHER
    return OpKind.OTHER


def _classify_method(node: fx.Node) -> str:
    name = node.target
    if name in ('add', 'add_'):
        return OpKind.ADD if _two_tensors(node) else OpKind.OTHER
    if name in ('mul', 'mul_'):
        return _mul_kind(node)
    if name in ('matmul', 'bmm'):
        return OpKind.MATMUL
    if name in _ACTIVATION_METHODS:
        return OpKind.ACTIVATION
    if name in _SHAPE_METHODS:
        return OpKind.SHAPE
    if name == 'mean':
        return OpKind.AVGPOOL
    return OpKind.OTHER


def classify_node(node: fx.Node, modules: Dict[str, nn.Module],
                  input_names: Optional[set] = None) -> str:
    """The :class:`OpKind` of ``node``.

    Args:
        node (fx.Node): The node.
        modules (dict): ``dict(root.named_modules())``.
        input_names (set, optional): Placeholder names that carry image
            tensors. Defaults to ``{'inputs', 'x', 'input', 'img'}``.

    Returns:
        str: One of the :class:`OpKind` names.
    """
    if node.meta.get('example_kind') == 'other':
        # A size, a shape or a flag computed while tracing (CustomTracer
        # with input_shape): never quantized.
        return OpKind.OTHER
    if node.op == 'placeholder':
        names = input_names or {'inputs', 'x', 'input', 'img'}
        return OpKind.INPUT if node.target in names else OpKind.OTHER
    if node.op == 'call_module':
        return _classify_module(modules[node.target])
    if node.op == 'call_function':
        return _classify_function(node)
    if node.op == 'call_method':
        return _classify_method(node)
    return OpKind.OTHER
