"""Classify fx nodes into the op kinds that backend rule tables speak of."""
import operator
from typing import Dict, Optional

import torch
import torch.nn.functional as F
from torch import fx, nn

from mmrazor_quant.models.task_modules.tracer.layer_types import (
    plain_layer_type,
)

__all__ = [
    'OpKind', 'classify_node', 'is_depthwise_conv', 'is_weighted_conv',
    'is_weighted_linear', 'plain_layer_type'
]


class OpKind:
    """Names of op kinds (plain strings so rule tables stay readable)."""
    INPUT = 'input'
    CONV = 'conv'
    LINEAR = 'linear'
    MATMUL = 'matmul'
    #: a matmul with a softmax output as one input (attention's attn @ V)
    ATTN_MATMUL = 'attention_matmul'
    ADD = 'add'
    MUL = 'mul'
    CAT = 'cat'
    AVGPOOL = 'avgpool'
    MAXPOOL = 'maxpool'
    ACTIVATION = 'activation'
    GELU = 'gelu'
    SOFTMAX = 'softmax'
    #: LayerNorm / GroupNorm (BatchNorm is folded into the conv before)
    NORM = 'norm'
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

_GELU_MODULES = (nn.GELU, )
_GELU_FUNCTIONS = {F.gelu}
_SOFTMAX_MODULES = (nn.Softmax, )
_SOFTMAX_FUNCTIONS = {F.softmax, torch.softmax}
_NORM_MODULES = (nn.LayerNorm, nn.GroupNorm)
_NORM_FUNCTIONS = {F.layer_norm, F.group_norm}
_SWISH_MODULES = (nn.SiLU, )
_SWISH_FUNCTIONS = {F.silu}
_SIGMOID_FUNCTIONS = {torch.sigmoid, F.sigmoid}

# Ops that only move, select or reshape values: a quantized input stays
# quantized (on the same grid), so no backend requantizes around them.
_SHAPE_MODULES = (nn.Flatten, nn.Dropout, nn.Identity, nn.Unflatten)
_SHAPE_FUNCTIONS = {
    torch.flatten, torch.reshape, operator.getitem, torch.transpose,
    torch.permute, F.dropout, torch.squeeze, torch.unsqueeze, torch.roll,
    torch.chunk, torch.split, torch.unbind, torch.unflatten
}
_SHAPE_METHODS = {
    'view', 'reshape', 'flatten', 'permute', 'transpose', 'contiguous',
    'squeeze', 'unsqueeze', 'expand', 'size', 'chunk', 'split', 'roll',
    'unbind', 'unflatten'
}

_INPUT_NAMES = frozenset({'inputs', 'x', 'input', 'img'})
#: How many ops apart a softmax may be from the matmul or add it marks.
_ATTENTION_SEARCH_DEPTH = 8

_ADD_FUNCTIONS = {operator.add, operator.iadd, torch.add}
_MUL_FUNCTIONS = {operator.mul, operator.imul, torch.mul}
_MATMUL_FUNCTIONS = {operator.matmul, torch.matmul, torch.bmm, torch.mm}
_CAT_FUNCTIONS = {torch.cat, torch.concat}


def is_weighted_conv(module: nn.Module) -> bool:
    """A float conv or a QAT conv (which subclasses the float one)."""
    return isinstance(module, nn.modules.conv._ConvNd)


def is_depthwise_conv(module: Optional[nn.Module]) -> bool:
    """A float or QAT conv with one group per input channel (more than
    one)."""
    return is_weighted_conv(module) and 1 < module.groups == \
        module.in_channels


def is_weighted_linear(module: nn.Module) -> bool:
    """A float linear or a QAT linear (which subclasses the float one)."""
    return isinstance(module, nn.Linear)


def _two_tensors(node: fx.Node) -> bool:
    return len(node.args) >= 2 and all(
        isinstance(a, fx.Node) for a in node.args[:2])


# Module classes and functions of each op kind, checked in this order.
_MODULE_KINDS = (
    (_SWISH_MODULES, OpKind.SWISH),
    (_ACTIVATION_MODULES, OpKind.ACTIVATION),
    (_AVGPOOL_MODULES, OpKind.AVGPOOL),
    (_MAXPOOL_MODULES, OpKind.MAXPOOL),
    (_SHAPE_MODULES, OpKind.SHAPE),
    (_GELU_MODULES, OpKind.GELU),
    (_SOFTMAX_MODULES, OpKind.SOFTMAX),
    (_NORM_MODULES, OpKind.NORM),
)
_FUNCTION_KINDS = (
    (_SWISH_FUNCTIONS, OpKind.SWISH),
    (_MATMUL_FUNCTIONS, OpKind.MATMUL),
    (_CAT_FUNCTIONS, OpKind.CAT),
    (_ACTIVATION_FUNCTIONS, OpKind.ACTIVATION),
    (_AVGPOOL_FUNCTIONS, OpKind.AVGPOOL),
    (_MAXPOOL_FUNCTIONS, OpKind.MAXPOOL),
    (_SHAPE_FUNCTIONS, OpKind.SHAPE),
    (_GELU_FUNCTIONS, OpKind.GELU),
    (_SOFTMAX_FUNCTIONS, OpKind.SOFTMAX),
    (_NORM_FUNCTIONS, OpKind.NORM),
)


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


def _classify_module(module: nn.Module) -> str:
    # a module may state its kind (an imported ONNX model's Reshape, Slice)
    declared = getattr(module, 'op_kind', None)
    if isinstance(declared, str):
        return declared
    if is_weighted_conv(module):
        return OpKind.CONV
    if is_weighted_linear(module):
        return OpKind.LINEAR
    for classes, kind in _MODULE_KINDS:
        if isinstance(module, classes):
            return kind
    return OpKind.OTHER


def _classify_function(node: fx.Node) -> str:
    target = node.target
    if target in _ADD_FUNCTIONS:
        return OpKind.ADD if _two_tensors(node) else OpKind.OTHER
    if target in _MUL_FUNCTIONS:
        return _mul_kind(node)
    for functions, kind in _FUNCTION_KINDS:
        if target in functions:
            return kind
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
    if name == 'softmax':
        return OpKind.SOFTMAX
    return OpKind.OTHER


def _base_kind(node: fx.Node, modules: Dict[str, nn.Module],
               input_names: Optional[set]) -> str:
    if node.meta.get('example_kind') == 'other':
        # A size, a shape or a flag computed while tracing (CustomTracer
        # with input_shape): never quantized.
        return OpKind.OTHER
    if node.op == 'placeholder':
        names = input_names or _INPUT_NAMES
        return OpKind.INPUT if node.target in names else OpKind.OTHER
    if node.op == 'call_module':
        return _classify_module(modules[node.target])
    if node.op == 'call_function':
        return _classify_function(node)
    if node.op == 'call_method':
        return _classify_method(node)
    return OpKind.OTHER


def _is_inserted_fake_quant(node: fx.Node) -> bool:
    # set by the fake-quant insertion pass on the nodes it creates
    return 'quantized_tensor' in node.meta


def _comes_from_softmax(node: fx.Node, modules: Dict[str, nn.Module]) -> bool:
    """Whether ``node`` is a softmax output seen through shape ops
    (dropout, reshapes) and fake quants."""
    for _ in range(_ATTENTION_SEARCH_DEPTH):
        # a fake quant inserted into this graph is not in ``modules`` yet
        kind = OpKind.SHAPE if _is_inserted_fake_quant(node) else \
            _base_kind(node, modules, None)
        if kind == OpKind.SOFTMAX:
            return True
        if kind != OpKind.SHAPE:
            return False
        inputs = [a for a in node.args if isinstance(a, fx.Node)]
        if not inputs:
            return False
        node = inputs[0]
    return False


def _feeds_softmax(node: fx.Node, modules: Dict[str, nn.Module]) -> bool:
    """Whether ``node`` reaches a softmax through shape ops, adds and fake
    quants only: an add on the attention scores (relative position bias,
    shifted-window mask)."""
    frontier = [node]
    for _ in range(_ATTENTION_SEARCH_DEPTH):
        nxt = []
        for n in frontier:
            for user in n.users:
                kind = OpKind.SHAPE if _is_inserted_fake_quant(user) else \
                    _base_kind(user, modules, None)
                if kind == OpKind.SOFTMAX:
                    return True
                if kind in (OpKind.SHAPE, OpKind.ADD):
                    nxt.append(user)
        if not nxt:
            return False
        frontier = nxt
    return False


def classify_node(node: fx.Node, modules: Dict[str, nn.Module],
                  input_names: Optional[set] = None) -> str:
    """The :class:`OpKind` of ``node``.

    Two kinds depend on the graph around the node: a matmul with a softmax
    output as an input is :attr:`OpKind.ATTN_MATMUL` (attention's
    ``attn @ V``), and an add whose result only flows into a softmax (a
    relative-position bias or an attention mask on the scores) is
    :attr:`OpKind.OTHER`: every backend adds those in float inside its
    attention kernel, so no rule table quantizes them.

    Args:
        node (fx.Node): The node.
        modules (dict): ``dict(root.named_modules())``.
        input_names (set, optional): Placeholder names that carry image
            tensors. Defaults to ``{'inputs', 'x', 'input', 'img'}``.

    Returns:
        str: One of the :class:`OpKind` names.
    """
    kind = _base_kind(node, modules, input_names)
    if kind == OpKind.MATMUL and any(
            _comes_from_softmax(a, modules) for a in node.args
            if isinstance(a, fx.Node)):
        return OpKind.ATTN_MATMUL
    if kind == OpKind.ADD and _feeds_softmax(node, modules):
        return OpKind.OTHER
    return kind
