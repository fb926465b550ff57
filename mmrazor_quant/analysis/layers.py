"""Where a quantized graph quantizes: its weighted layers and fake quants.

A *quantized layer* is a ``call_module`` node of a QAT conv/linear
(:func:`~mmrazor_quant.models.qat_modules.is_qat_module`). Its *input fake
quant* is the activation fake quant its first input passes through last
(found by walking back over shape-only ops such as pooling or flatten).
Names are the GraphModule's module names, i.e. relative to the quantized
architecture, which is what ``qconfig_mapping.module_name`` matches.
"""
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Iterator, List, Optional, Tuple

import torch
from torch import Tensor, fx, nn

from mmrazor_quant.models.fake_quants.base import BaseFakeQuantize
from mmrazor_quant.models.qat_modules import is_qat_module

__all__ = [
    'QuantLayer', 'find_quantized_layers',
    'find_graph_fake_quants', 'flatten_output', 'run_batches'
]

# How far back over single-tensor ops a layer's input fake quant is looked
# for (e.g. fake quant -> max pool -> conv on OpenVINO).
_MAX_HOPS = 4


@dataclass
class QuantLayer:
    """A weighted layer of the quantized graph.

    Attributes:
        name (str): Module name in the graph (``backbone.conv1.conv``).
        module (nn.Module): The QAT module.
        weight_fake_quant (BaseFakeQuantize): Its weight fake quant.
        input_fake_quant (BaseFakeQuantize, optional): The activation fake
            quant on its input; None if the input stays float. With
            backends that quantize a tensor once for all its consumers it
            may be shared with other layers.
        input_name (str, optional): Module name of ``input_fake_quant``.
    """
    name: str
    module: nn.Module
    weight_fake_quant: BaseFakeQuantize
    input_fake_quant: Optional[BaseFakeQuantize] = None
    input_name: Optional[str] = None

    def fake_quants(self, part: str) -> List[BaseFakeQuantize]:
        """The fake quants of ``part``: ``'weight'``, ``'activation'`` or
        ``'both'``.

        Raises:
            ValueError: If ``part`` is none of these.
        """
        if part not in ('weight', 'activation', 'both'):
            raise ValueError(f"part must be 'weight', 'activation' or "
                             f"'both', got {part!r}")
        found = []
        if part in ('weight', 'both'):
            found.append(self.weight_fake_quant)
        if part in ('activation', 'both') and self.input_fake_quant:
            found.append(self.input_fake_quant)
        return found


def _module_of(gm: fx.GraphModule, node: Any) -> Optional[nn.Module]:
    if isinstance(node, fx.Node) and node.op == 'call_module':
        return gm.get_submodule(str(node.target))
    return None


def _input_fake_quant(gm: fx.GraphModule, node: fx.Node
                      ) -> Tuple[Optional[BaseFakeQuantize], Optional[str]]:
    current = node.args[0] if node.args else None
    for _ in range(_MAX_HOPS):
        if not isinstance(current, fx.Node) or current.op in (
                'placeholder', 'get_attr', 'output'):
            return None, None
        module = _module_of(gm, current)
        if isinstance(module, BaseFakeQuantize):
            return module, str(current.target)
        if is_qat_module(module):
            return None, None  # the previous layer's output: not quantized
        tensors = [a for a in current.all_input_nodes
                   if a.op != 'get_attr']
        if len(tensors) != 1:
            return None, None  # add/cat: not one tensor's fake quant
        current = tensors[0]
    return None, None


def find_quantized_layers(gm: fx.GraphModule) -> List[QuantLayer]:
    """The quantized conv/linear layers of ``gm``, in graph order, once
    each."""
    layers, seen = [], set()
    for node in gm.graph.nodes:
        module = _module_of(gm, node)
        if node.target in seen or not is_qat_module(module):
            continue
        seen.add(node.target)
        fake_quant, fq_name = _input_fake_quant(gm, node)
        layers.append(
            QuantLayer(str(node.target), module, module.weight_fake_quant,
                       fake_quant, fq_name))
    return layers


def find_graph_fake_quants(
        gm: fx.GraphModule) -> List[Tuple[str, BaseFakeQuantize]]:
    """The activation fake quants ``gm`` calls, in graph order."""
    found, seen = [], set()
    for node in gm.graph.nodes:
        module = _module_of(gm, node)
        if isinstance(module, BaseFakeQuantize) and node.target not in seen:
            seen.add(node.target)
            found.append((str(node.target), module))
    return found


def flatten_output(output: Any) -> Tensor:
    """Every floating tensor of a model output (a tensor, or tuples, lists
    and dicts of them, dict values in key order) as one flat vector.

    Raises:
        TypeError: If the output holds no floating tensor.
    """
    tensors: List[Tensor] = []

    def visit(value: Any) -> None:
        if isinstance(value, Tensor):
            if value.is_floating_point():
                tensors.append(value.detach().flatten().float())
        elif isinstance(value, (list, tuple)):
            for item in value:
                visit(item)
        elif isinstance(value, dict):
            for key in sorted(value):
                visit(value[key])

    visit(output)
    if not tensors:
        raise TypeError('the model output holds no floating tensor '
                        f'(got {type(output).__name__})')
    return torch.cat(tensors)


def run_batches(forward: Callable[[Tensor], Any],
                inputs: Iterable[Tensor],
                bar: Any = None) -> Iterator[Tensor]:
    """Yield ``flatten_output(forward(x))`` for each input, without grad."""
    with torch.no_grad():
        for x in inputs:
            yield flatten_output(forward(x))
            if bar is not None:
                bar.update()
