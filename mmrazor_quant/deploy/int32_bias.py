"""Put the folded bias of each quantized conv/linear on onnxruntime's int32
bias grid, in the quantized model itself.

onnxruntime's int8 kernels (``QLinearConv``, ``QGemm``, ...) take the bias as
int32 on the grid ``s_in * s_w`` (input scale times per-channel weight
scale): fusing ``DequantizeLinear -> Conv -> QuantizeLinear`` rounds a float
bias onto it. The simulation adds the float bias, so the two differ by up to
half a grid step before every output rounding. Of the int8 kernels'
departures from the simulation this is the largest: on a W8A8 ResNet-18 the
float bias flips about fifteen times as many of a layer's outputs as the int32
accumulation and its float requantization multiplier do.

:func:`align_bias_to_int32_grid_` moves every folded bias onto that grid by
changing the model's own bias parameter (the BN ``beta`` of a fused
conv-BN, else the layer's bias): the simulation then adds exactly the bias
the runtime uses, and the int8 runtime matches it like the unfused graph
does. Each bias moves by at most half a step of ``s_in * s_w``, a small
fraction of an output step.
"""
from dataclasses import dataclass
from typing import Dict, Iterator, List, Optional, Tuple

import torch
from torch import Tensor, fx, nn

from mmrazor_quant.models.fake_quants import BaseFakeQuantize
from mmrazor_quant.models.qat_modules import is_qat_module
from mmrazor_quant.models.utils import tensor_graph_module

__all__ = ['BiasAlignment', 'align_bias_to_int32_grid_', 'bias_grid_offsets']


@dataclass
class BiasAlignment:
    """What :func:`align_bias_to_int32_grid_` changed.

    Attributes:
        layers (list[str]): Layers whose bias was moved.
        skipped (dict): Layers left alone, with the reason.
        max_grid_steps (float): Largest move, in steps of ``s_in * s_w``
            (at most 0.5).
    """
    layers: List[str]
    skipped: Dict[str, str]
    max_grid_steps: float

    def format(self) -> str:
        """One line for the command line."""
        text = (f'int32 bias: {len(self.layers)} bias(es) moved onto the '
                f's_in * s_w grid (largest move '
                f'{self.max_grid_steps:.3f} grid steps)')
        reasons: Dict[str, int] = {}
        for reason in self.skipped.values():
            reasons[reason] = reasons.get(reason, 0) + 1
        if reasons:
            text += '; left alone: ' + ', '.join(
                f'{n} ({reason})' for reason, n in reasons.items())
        return text


#: Shape-only ops between a fake quant and a layer (``x.view(n, -1)`` before
#: a linear head): they keep the input's grid.
_RESHAPES = frozenset({'view', 'reshape', 'flatten', torch.flatten,
                       torch.reshape})


def _input_fake_quant(node: fx.Node, modules: Dict[str, nn.Module],
                      through_reshapes: bool = False
                      ) -> Optional[BaseFakeQuantize]:
    src = node.args[0] if node.args else None
    while through_reshapes and isinstance(src, fx.Node) and \
            src.op in ('call_method', 'call_function') and \
            src.target in _RESHAPES and src.args:
        src = src.args[0]
    if not isinstance(src, fx.Node) or src.op != 'call_module':
        return None
    module = modules.get(str(src.target))
    return module if isinstance(module, BaseFakeQuantize) else None


def _grid(act_fq: BaseFakeQuantize, weight_fq: BaseFakeQuantize) -> Tensor:
    """``s_in * s_w`` per output channel, in float32 as the runtime has it."""
    s_in = act_fq.get_qparams()[0].detach().float().reshape(())
    return s_in * weight_fq.get_qparams()[0].detach().float().reshape(-1)


def _layers(gm: fx.GraphModule,
            through_reshapes: bool = False
            ) -> Iterator[Tuple[str, nn.Module, Optional[Tensor], str]]:
    """``(name, QAT module, grid or None, reason if None)`` per QAT layer."""
    modules = dict(gm.named_modules())
    for node in gm.graph.nodes:
        if node.op != 'call_module' or \
                not is_qat_module(modules[str(node.target)]):
            continue
        name, module = str(node.target), modules[str(node.target)]
        act_fq = _input_fake_quant(node, modules, through_reshapes)
        if act_fq is None:
            yield name, module, None, 'input not quantized by a fake quant'
        elif act_fq.is_per_channel:
            yield name, module, None, 'per-channel input quantization'
        elif act_fq.quant_max - act_fq.quant_min < 16:
            # onnxruntime has no 4-bit kernel; the exporters keep such
            # biases float (see bias_passes).
            yield name, module, None, '4-bit input, bias stays float'
        else:
            yield name, module, _grid(act_fq, module.weight_fake_quant), ''


def _check_frozen(gm: fx.GraphModule) -> None:
    live = [
        name for name, m in gm.named_modules()
        if isinstance(m, BaseFakeQuantize) and m.observer_on
    ]
    if live:
        raise RuntimeError(
            f'{len(live)} fake quant(s) still observe: {live}. Call '
            'disable_observer(model) after calibration/training: the grid '
            's_in * s_w must not move after the biases are put on it')


def _bias_parameter(name: str, module: nn.Module) -> Tensor:
    """The parameter whose change moves the folded bias one for one."""
    bn = getattr(module, 'bn', None)
    param = bn.bias if bn is not None else module.bias
    if param is None:
        raise ValueError(f'{name}: its bias is not a parameter (BN without '
                         'affine?), so it cannot be moved onto the int32 '
                         'grid; export with float biases instead')
    return param


def _bias_of_layer(name: str, gm: fx.GraphModule) -> Optional[Tensor]:
    module = gm.get_submodule(name)
    return None if hasattr(module, 'bn') else module.bias


@torch.no_grad()
def align_bias_to_int32_grid_(qmodel: nn.Module,
                              through_reshapes: bool = False
                              ) -> BiasAlignment:
    """Round each quantized layer's folded bias onto ``s_in * s_w``, in
    place (``b <- round(b / (s_in s_w)) s_in s_w``).

    A layer is aligned when its input comes straight from a per-tensor
    activation fake quant (what onnxruntime fuses). Layers without a bias
    have nothing to align. Call it on the final model (after calibration or
    QAT, observers disabled), then evaluate and export that model.

    Args:
        qmodel (MMArchitectureQuant): The calibrated or trained model; its
            forward modes share the modules, so all of them change. Its
            tensor-mode GraphModule (or a DDP wrapper) is taken too.
        through_reshapes (bool): Also align a layer whose input reaches the
            fake quant through shape-only ops (``view``, ``reshape``,
            ``flatten``), for a runtime that keeps the grid across them
            (rknn-toolkit2 rounds such a linear head's bias too). Defaults
            to False.

    Returns:
        BiasAlignment: The layers moved and the largest move.

    Raises:
        TypeError: If ``qmodel`` is neither a quantized model nor a
            GraphModule.
        ValueError: If ``qmodel`` has no tensor-mode graph, or a layer's
            bias cannot be changed (it names the layer). Nothing is
            changed then.
        RuntimeError: If a fake quant still has its observer enabled.
    """
    gm = tensor_graph_module(qmodel)
    _check_frozen(gm)
    plan, skipped = [], {}
    for name, module, grid, reason in _layers(gm, through_reshapes):
        folded = module.get_folded_weight_bias()[1]
        if grid is None:
            skipped[name] = reason
        elif folded is not None:
            plan.append((name, _bias_parameter(name, module), folded, grid))
    moves = [0.0]
    for name, param, folded, grid in plan:
        target = torch.round(folded / grid) * grid
        if param is _bias_of_layer(name, gm):
            param.copy_(target)  # the folded bias is the parameter itself
        else:
            param.add_((target - folded).to(param.dtype))
        moves.append(float(((target - folded) / grid).abs().max()))
    return BiasAlignment([p[0] for p in plan], skipped, max(moves))


@torch.no_grad()
def bias_grid_offsets(qmodel: nn.Module) -> Dict[str, float]:
    """Largest distance of each layer's folded bias from ``s_in * s_w``, in
    grid steps (0 after :func:`align_bias_to_int32_grid_`, up to 0.5
    before), for the layers that function would align."""
    offsets = {}
    for name, module, grid, _ in _layers(tensor_graph_module(qmodel)):
        folded = module.get_folded_weight_bias()[1]
        if grid is not None and folded is not None:
            steps = folded / grid
            offsets[name] = float((steps - torch.round(steps)).abs().max())
    return offsets
