"""Rewrite a converted ONNX graph so the quantizers see what a hand-written
torch model would give them.

The converter turns every ONNX node into a module of its own. Quantizers
classify ops by torch module class and function (see
``models/quantizers/op_kinds.py``), so, on the nodes of the float data path:

* a ``MatMul`` by a constant 2-D weight (and the ``Add`` of a constant bias
  after it) becomes ``nn.Linear``: its weights are quantized per channel;
* ``Add``/``Sub``/``Mul``/``Div`` become ``operator`` calls, a one-element
  constant operand a Python float: a scalar is not a second tensor to
  quantize;
* a ``MatMul`` of two activations becomes ``torch.matmul`` (attention);
* ``x * clip(x + 3, 0, 6) / 6`` becomes ``nn.Hardswish``, ``Sigmoid``
  ``torch.sigmoid`` (so ``x * sigmoid(x)`` is seen as Swish), a
  ``Softmax`` over the last axis ``nn.Softmax`` (also when the version
  converter wrote it as ``Flatten``, 2-D ``Softmax``, ``Reshape`` back);
* ``ReduceMean`` over the spatial axes and ``GlobalAveragePool`` become
  ``nn.AdaptiveAvgPool2d``,
  other means ``Tensor.mean`` (both pooling); ``HardSigmoid`` becomes
  ``nn.Hardsigmoid``; ``Transpose`` ``torch.permute``; ``Concat``
  ``torch.cat``;
* ``x * 1`` and ``x + 0`` are dropped, a scalar scale or shift right after
  a conv or linear layer is folded into its weights and bias, and one
  right before convs that do not pad into theirs;
* a LayerNorm written out (``ReduceMean``, ``Sub``, ``Pow``, ``ReduceMean``,
  ``Add`` eps, ``Sqrt``, ``Div``, ``Mul`` gamma, ``Add`` beta) becomes
  ``nn.LayerNorm``.

The converter's modules that remain are leaves of the trace (see
``CustomTracer``); those that only move values (``Reshape``, ``Slice``,
``Gather``, ``Squeeze``, ...) are marked ``op_kind = 'shape'`` (a
quantized input stays quantized), and so are all nodes of the shape and
index subgraphs, which compute no float values and stay float. Every
rewritten node keeps its ONNX name in ``node.meta['onnx_name']``.
"""
import operator
from typing import Dict, List, Optional

import torch
from torch import fx, nn

from .onnx_graph_info import OnnxGraphInfo

__all__ = ['normalize_graph', 'MOVE_OPS', 'ONNX_NAME']

#: ``node.meta`` key of the ONNX node name(s) behind an fx node.
ONNX_NAME = 'onnx_name'

#: Ops that only move or select values: a quantized input stays quantized.
MOVE_OPS = frozenset({
    'Reshape', 'Flatten', 'Squeeze', 'Unsqueeze', 'Slice', 'Gather',
    'Split', 'Expand', 'Tile', 'Identity', 'Dropout', 'Transpose',
    'DepthToSpace', 'SpaceToDepth', 'MaxPool'
})

_BINARY = {'Add': operator.add, 'Sub': operator.sub, 'Mul': operator.mul,
           'Div': operator.truediv}


class _Rewriter:
    """One pass over a converted GraphModule; see the module docstring."""

    def __init__(self, gm: fx.GraphModule, info: OnnxGraphInfo) -> None:
        self.gm = gm
        self.info = info
        self.graph = gm.graph
        self.fused: Dict[str, List[str]] = {}
        #: module names already replaced by torch modules
        self.done: set = set()

    # -- helpers ---------------------------------------------------------
    def op(self, node) -> Optional[str]:
        if not isinstance(node, fx.Node) or node.op != 'call_module':
            return None
        if node.target in self.info.shape_modules or \
                node.target in self.done:
            return None
        return self.info.op_type(node.target)

    def const(self, arg) -> Optional[torch.Tensor]:
        if isinstance(arg, fx.Node) and arg.op == 'get_attr':
            value = self.gm
            for part in arg.target.split('.'):
                value = getattr(value, part)
            return value if isinstance(value, torch.Tensor) else None
        return None

    def scalar(self, arg):
        """A one-element constant as a Python number, else ``arg``."""
        value = self.const(arg)
        if value is not None and value.numel() == 1:
            return value.item()
        return arg

    def replace(self, node: fx.Node, new: fx.Node,
                names: Optional[List[str]] = None) -> None:
        new.meta[ONNX_NAME] = names or [self.info.onnx_name(node.target)]
        node.replace_all_uses_with(new)
        self.graph.erase_node(node)
        self._drop_module(node.target)

    def _drop_module(self, name: str) -> None:
        if not any(n.op == 'call_module' and n.target == name
                   for n in self.graph.nodes):
            self.gm.delete_submodule(name)

    def set_module(self, node: fx.Node, module: nn.Module) -> None:
        self.gm.delete_submodule(node.target)
        self.gm.add_submodule(node.target, module)
        self.done.add(node.target)
        node.meta[ONNX_NAME] = [self.info.onnx_name(node.target)]

    def axes(self, node: fx.Node) -> Optional[List[int]]:
        axes = self.info.attribute(node.target, 'axes')
        if axes is None and len(node.args) > 1:
            value = self.const(node.args[1])
            axes = value.tolist() if value is not None else None
        return list(axes) if axes is not None else None

    def only_user(self, node: fx.Node) -> Optional[fx.Node]:
        return next(iter(node.users)) if len(node.users) == 1 else None

    # -- passes ----------------------------------------------------------
    def layer_norms(self) -> None:
        for node in list(self.graph.nodes):
            if node.graph is self.graph and self.op(node) == 'ReduceMean':
                self._layer_norm_from(node)

    def _layer_norm_from(self, mean: fx.Node) -> None:
        x = mean.args[0]
        if self.axes(mean) not in ([-1], ) or \
                not self.info.attribute(mean.target, 'keepdims', 1):
            return
        sub = next((u for u in mean.users if self.op(u) == 'Sub'
                    and u.args[:2] == (x, mean)), None)
        if sub is None or len(mean.users) != 1:
            return
        users = {self.op(u): u for u in sub.users}
        pow_, div = users.get('Pow'), users.get('Div')
        if len(sub.users) != 2 or pow_ is None or div is None or \
                self.scalar(pow_.args[1]) != 2:
            return
        var = self.only_user(pow_)
        add_eps = self.only_user(var) if self.op(var) == 'ReduceMean' \
            else None
        sqrt = self.only_user(add_eps) if self.op(add_eps) == 'Add' \
            else None
        if self.op(sqrt) != 'Sqrt' or div.args[:2] != (sub, sqrt):
            return
        eps = self.scalar(add_eps.args[1])
        if not isinstance(eps, float):
            return
        chain = [mean, sub, pow_, var, add_eps, sqrt, div]
        mul = self.only_user(div)
        gamma = self.const(mul.args[1]) if self.op(mul) == 'Mul' else None
        add = self.only_user(mul) if gamma is not None else None
        beta = self.const(add.args[1]) if self.op(add) == 'Add' else None
        if gamma is None or gamma.dim() != 1:
            return
        chain.append(mul)
        if beta is not None and beta.shape == gamma.shape:
            chain.append(add)
        last = chain[-1]
        norm = nn.LayerNorm(gamma.numel(), eps=eps)
        with torch.no_grad():
            norm.weight.copy_(gamma)
            if last is add:
                norm.bias.copy_(beta)
            else:
                norm.bias.zero_()
        name = mean.target
        names = [self.info.onnx_name(n.target) for n in chain]
        with self.graph.inserting_after(last):
            new = self.graph.call_module(name, (x, ))
        self.gm.delete_submodule(name)
        self.gm.add_submodule(name, norm)
        self.done.add(name)
        new.meta[ONNX_NAME] = names
        last.replace_all_uses_with(new)
        for n in reversed(chain):
            self.graph.erase_node(n)
            if n.target != name:
                self._drop_module(n.target)
        self.fused[name] = names

    def hard_swishes(self) -> None:
        for node in list(self.graph.nodes):
            if node.graph is self.graph and self.op(node) == 'Add':
                self._hard_swish_from(node)

    def _hard_swish_from(self, add: fx.Node) -> None:
        """``x * clip(x + 3, 0, 6) / 6`` (Paddle's and torch<1.6's
        hardswish written out) -> ``nn.Hardswish``."""
        x, three = add.args[:2] if len(add.args) >= 2 else (None, None)
        if self.scalar(three) != 3 or not isinstance(x, fx.Node):
            return
        clip = self.only_user(add)
        if self.op(clip) != 'Clip' or not isinstance(
                self.gm.get_submodule(clip.target), nn.ReLU6):
            return
        mul = next((u for u in clip.users if self.op(u) == 'Mul'
                    and set(u.args[:2]) == {x, clip}), None)
        if mul is None or len(clip.users) != 1:
            return
        div = self.only_user(mul)
        scale = self.scalar(div.args[1]) if div is not None and \
            len(div.args) > 1 else None
        if not ((self.op(div) == 'Div' and scale == 6) or
                (self.op(div) == 'Mul' and isinstance(scale, float)
                 and abs(scale - 1 / 6) < 1e-6)):
            return
        chain = [add, clip, mul, div]
        names = [self.info.onnx_name(n.target) for n in chain]
        name = add.target
        with self.graph.inserting_after(div):
            new = self.graph.call_module(name, (x, ))
        self.gm.delete_submodule(name)
        self.gm.add_submodule(name, nn.Hardswish())
        self.done.add(name)
        new.meta[ONNX_NAME] = names
        div.replace_all_uses_with(new)
        for n in reversed(chain):
            self.graph.erase_node(n)
            if n.target != name:
                self._drop_module(n.target)
        self.fused[name] = names

    def linears(self) -> None:
        for node in list(self.graph.nodes):
            if node.graph is not self.graph or self.op(node) != 'MatMul':
                continue
            weight = self.const(node.args[1])
            if weight is None or weight.dim() != 2 or \
                    self.const(node.args[0]) is not None:
                continue
            add = self.only_user(node)
            bias = None
            if self.op(add) == 'Add':
                other = add.args[1] if add.args[0] is node else add.args[0]
                bias = self.const(other)
                if bias is None or bias.numel() != weight.shape[1] or \
                        bias.dim() > 1:
                    bias = None
            linear = nn.Linear(weight.shape[0], weight.shape[1],
                               bias=bias is not None)
            with torch.no_grad():
                linear.weight.copy_(weight.t())
                if bias is not None:
                    linear.bias.copy_(bias.reshape(-1))
            names = [self.info.onnx_name(node.target)]
            node.args = (node.args[0], )
            self.set_module(node, linear)
            if bias is not None:
                names.append(self.info.onnx_name(add.target))
                node.meta[ONNX_NAME] = names
                self.fused[node.target] = names
                add.replace_all_uses_with(node)
                self.graph.erase_node(add)
                self._drop_module(add.target)

    def functions(self) -> None:
        for node in list(self.graph.nodes):
            op = self.op(node)
            if op is None:
                continue
            new = None
            with self.graph.inserting_after(node):
                if op in _BINARY and self._broadcasts(node):
                    args = tuple(self.scalar(a) for a in node.args[:2])
                    new = self.graph.call_function(_BINARY[op], args)
                elif op == 'MatMul':
                    new = self.graph.call_function(torch.matmul,
                                                   tuple(node.args[:2]))
                elif op == 'Transpose':
                    perm = self.info.attribute(node.target, 'perm')
                    if perm is not None:
                        new = self.graph.call_function(
                            torch.permute, (node.args[0], list(perm)))
                elif op == 'Concat':
                    new = self.graph.call_function(
                        torch.cat, (list(node.args),
                                    self.info.attribute(node.target,
                                                        'axis')))
                elif op == 'ReduceMean':
                    new = self._mean(node)
                elif op == 'Sigmoid':
                    # a function, as hand-written Swish (x * x.sigmoid())
                    new = self.graph.call_function(torch.sigmoid,
                                                   (node.args[0], ))
            if new is not None:
                self.replace(node, new)
            elif op == 'Softmax' and self._last_axis(node):
                self.set_module(node, nn.Softmax(dim=-1))
            elif op == 'GlobalAveragePool' and \
                    self.info.ranks.get(node.target) == 4:
                self.set_module(node, nn.AdaptiveAvgPool2d(1))
            elif op == 'HardSigmoid':
                self.set_module(node, _hard_sigmoid(
                    self.info.attribute(node.target, 'alpha', 0.2),
                    self.info.attribute(node.target, 'beta', 0.5)))

    def coerced_softmaxes(self) -> None:
        """``Reshape(Softmax(Flatten(x, axis=r-1)), Shape(x))`` as a
        last-axis softmax of ``x``: onnx's version converter writes an
        opset < 13 softmax (2-D coerced) that way. The ``Shape`` of an
        activation would reach the export as the example's shape, fixing
        the batch; the softmax itself is seen as attention's."""
        for node in list(self.graph.nodes):
            if node.graph is not self.graph or self.op(node) != 'Reshape' \
                    or len(node.args) != 2:
                continue
            softmax, shape = node.args
            if self.op(softmax) != 'Softmax' or \
                    not isinstance(shape, fx.Node) or \
                    self.info.op_type(shape.target) != 'Shape' or \
                    len(softmax.users) != 1:
                continue
            flatten = softmax.args[0]
            if self.op(flatten) != 'Flatten' or len(flatten.users) != 1:
                continue
            x = flatten.args[0]
            rank = self.info.ranks.get(flatten.target)
            axis = self.info.attribute(flatten.target, 'axis', 1)
            if shape.args[:1] != (x, ) or rank is None or \
                    axis not in (rank - 1, -1) or \
                    self.info.attribute(softmax.target, 'axis', 1) \
                    not in (1, -1) or \
                    self.info.attribute(shape.target, 'start', 0) != 0 or \
                    self.info.attribute(shape.target, 'end') is not None:
                continue
            self.set_module(softmax, nn.Softmax(dim=-1))
            softmax.args = (x, )
            node.replace_all_uses_with(softmax)
            for dead in (node, flatten, shape):
                if not dead.users:
                    self.graph.erase_node(dead)
                    self._drop_module(dead.target)

    def scalar_affines(self) -> None:
        """Drop ``x * 1`` and ``x + 0``; fold a scalar ``* c``, ``/ c``,
        ``+ b``, ``- b`` right after a conv or linear layer (PP-LCNet's
        learnable affine blocks) into its weights and bias."""
        for node in list(self.graph.nodes):
            if node.op != 'call_function' or node.target not in _SCALAR_OPS \
                    or len(node.args) != 2:
                continue
            tensor, value = node.args
            if isinstance(tensor, (int, float)) and \
                    node.target in (operator.mul, operator.add):
                tensor, value = value, tensor
            if not isinstance(tensor, fx.Node) or \
                    not isinstance(value, (int, float)):
                continue
            scale, shift = _SCALAR_OPS[node.target](float(value))
            if scale is None:
                continue
            if scale == 1.0 and shift == 0.0:
                self._bypass(node, tensor)
                continue
            layer = self._single_use_layer(tensor)
            if layer is None:
                continue
            _fold_affine(self.gm.get_submodule(layer.target), scale, shift)
            self.fused.setdefault(layer.target, list(
                layer.meta.get(ONNX_NAME, [layer.target])))
            self.fused[layer.target] += node.meta.get(ONNX_NAME, [])
            layer.meta[ONNX_NAME] = self.fused[layer.target]
            self._bypass(node, tensor)

    def affines_into_next_convs(self) -> None:
        """Fold ``x * s + b`` (scalars) whose only users are convs into
        them: ``conv(s * x + b)`` is ``conv`` with weights ``s * W`` and
        bias ``+ b * sum(W)``, exact where no conv pads (``b = 0`` folds
        into any conv). PP-LCNetV3's affine blocks after an activation then
        cost no requantization."""
        for node in list(self.graph.nodes):
            if node.graph is not self.graph:
                continue
            affine = self._affine_chain(node)
            if affine is None:
                continue
            x, scale, shift, chain = affine
            convs = [u for u in chain[-1].users]
            if not convs or not all(self._foldable_conv(u, chain[-1], shift)
                                    for u in convs):
                continue
            for conv in convs:
                _fold_input_affine(self.gm.get_submodule(conv.target),
                                   scale, shift)
                names = list(conv.meta.get(ONNX_NAME, [conv.target]))
                for n in chain:
                    names += n.meta.get(ONNX_NAME, [])
                conv.meta[ONNX_NAME] = self.fused[conv.target] = names
            chain[-1].replace_all_uses_with(x)
            for n in reversed(chain):
                self.graph.erase_node(n)

    def _affine_chain(self, node: fx.Node):
        """``(x, scale, shift, [mul, add])`` of ``x * s (+ b)`` starting at
        the ``mul`` ``node``, or None."""
        if node.op != 'call_function' or node.target is not operator.mul:
            return None
        x, scale = node.args[:2] if len(node.args) == 2 else (None, None)
        if isinstance(x, (int, float)):
            x, scale = scale, x
        if not isinstance(x, fx.Node) or not isinstance(scale, float):
            return None
        chain, shift = [node], 0.0
        add = self.only_user(node)
        if add is not None and add.op == 'call_function' and \
                add.target in (operator.add, operator.sub) and \
                add.args[0] is node and isinstance(add.args[1], float):
            shift = add.args[1] if add.target is operator.add \
                else -add.args[1]
            chain.append(add)
        elif len(node.users) != 1 and any(
                u.op != 'call_module' for u in node.users):
            return None
        return x, scale, shift, chain

    def _foldable_conv(self, user: fx.Node, value: fx.Node,
                       shift: float) -> bool:
        if user.op != 'call_module' or user.args[:1] != (value, ) or \
                len(user.args) != 1 or user.kwargs:
            return False
        conv = self.gm.get_submodule(user.target)
        if not isinstance(conv, nn.Conv2d):
            return False
        return shift == 0.0 or all(p == 0 for p in conv.padding) \
            and conv.padding_mode == 'zeros'

    def _bypass(self, node: fx.Node, tensor: fx.Node) -> None:
        node.replace_all_uses_with(tensor)
        self.graph.erase_node(node)

    def _single_use_layer(self, node: fx.Node) -> Optional[fx.Node]:
        if node.op != 'call_module' or len(node.users) != 1:
            return None
        module = self.gm.get_submodule(node.target)
        if isinstance(module, (nn.Conv1d, nn.Conv2d, nn.Conv3d, nn.Linear)):
            return node
        return None

    def _last_axis(self, node: fx.Node) -> bool:
        """A softmax over the last axis (any opset gives torch's then)."""
        default = -1 if self.info.opset >= 13 else 1
        axis = self.info.attribute(node.target, 'axis', default)
        rank = self.info.ranks.get(node.target)
        return axis == -1 or (rank is not None and axis == rank - 1)

    def _broadcasts(self, node: fx.Node) -> bool:
        # opset < 7 broadcast by an axis attribute; keep those modules
        return self.info.opset >= 7 and len(node.args) == 2 and \
            not node.kwargs

    def _mean(self, node: fx.Node) -> Optional[fx.Node]:
        axes = self.axes(node)
        keepdims = bool(self.info.attribute(node.target, 'keepdims', 1))
        if axes is None:
            return None
        if sorted(axes) in ([2, 3], [-2, -1]) and keepdims:
            self.set_module(node, nn.AdaptiveAvgPool2d(1))
            return None
        return self.graph.call_method('mean', (node.args[0], ),
                                      dict(dim=axes, keepdim=keepdims))

    def mark_leaves(self) -> None:
        """Mark the converter's remaining modules for the op classifier."""
        for node in self.graph.nodes:
            if node.op != 'call_module' or \
                    node.target not in self.info.nodes:
                continue
            module = self.gm.get_submodule(node.target)
            node.meta.setdefault(ONNX_NAME,
                                 [self.info.onnx_name(node.target)])
            if node.target in self.info.shape_modules or \
                    self.info.op_type(node.target) in MOVE_OPS and \
                    not isinstance(module, nn.MaxPool2d):
                if _is_converter_module(module):
                    module.op_kind = 'shape'


def _scale(c: float):
    return c, 0.0


#: ``op(x, c)`` as ``x * scale + shift`` (``(None, None)``: not affine)
_SCALAR_OPS = {
    operator.mul: _scale,
    operator.truediv: lambda c: (1.0 / c, 0.0) if c else (None, None),
    operator.add: lambda c: (1.0, c),
    operator.sub: lambda c: (1.0, -c),
}


@torch.no_grad()
def _fold_affine(layer: nn.Module, scale: float, shift: float) -> None:
    """``layer(x) * scale + shift`` as ``layer`` itself."""
    layer.weight.mul_(scale)
    if layer.bias is None:
        out = layer.weight.shape[0]
        layer.bias = nn.Parameter(layer.weight.new_zeros(out))
    layer.bias.mul_(scale).add_(shift)


@torch.no_grad()
def _fold_input_affine(conv: nn.Conv2d, scale: float, shift: float) -> None:
    """``conv(x * scale + shift)`` as ``conv`` itself (no padding when
    ``shift`` is not 0)."""
    extra = conv.weight.sum(dim=(1, 2, 3)) * shift
    conv.weight.mul_(scale)
    if conv.bias is None:
        conv.bias = nn.Parameter(extra.clone())
    else:
        conv.bias.add_(extra)


def _is_converter_module(module: nn.Module) -> bool:
    return any(c.__name__ == 'OnnxToTorchModule'
               for c in type(module).__mro__)


class HardSigmoid(nn.Hardsigmoid):
    """ONNX's ``HardSigmoid``: ``clip(alpha * x + beta, 0, 1)``; an
    ``nn.Hardsigmoid`` for the quantizers (alpha 1/6, beta 1/2 is exactly
    torch's)."""

    def __init__(self, alpha: float, beta: float) -> None:
        super().__init__()
        self.alpha, self.beta = alpha, beta

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.clamp(x * self.alpha + self.beta, 0.0, 1.0)

    def extra_repr(self) -> str:
        return f'alpha={self.alpha}, beta={self.beta}'


def _hard_sigmoid(alpha: float, beta: float) -> nn.Module:
    if abs(alpha - 1 / 6) < 1e-6 and abs(beta - 0.5) < 1e-6:
        return nn.Hardsigmoid()
    return HardSigmoid(alpha, beta)


def normalize_graph(gm: fx.GraphModule,
                    info: OnnxGraphInfo) -> Dict[str, List[str]]:
    """Rewrite ``gm`` in place (see the module docstring) and return the
    fused modules: module name -> the ONNX node names it stands for."""
    rewriter = _Rewriter(gm, info)
    rewriter.layer_norms()
    rewriter.hard_swishes()
    rewriter.linears()
    rewriter.coerced_softmaxes()
    rewriter.functions()
    rewriter.scalar_affines()
    rewriter.affines_into_next_convs()
    rewriter.mark_leaves()
    gm.graph.eliminate_dead_code()
    gm.delete_all_unused_submodules()
    gm.graph.lint()
    gm.recompile()
    return rewriter.fused
