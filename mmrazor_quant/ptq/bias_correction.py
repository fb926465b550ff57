r"""Empirical bias correction (Nagel et al., 2019, sec. 4.2; as in PPQ).

Quantizing weights and inputs shifts the mean of a layer's output:
:math:`E[\tilde y] \ne E[y]`. With calibration data, for each QAT
conv/linear in graph order, the pre-activation outputs of the float model
(:math:`y`, all fake quants off) and of the quantized model
(:math:`\tilde y`, everything on, earlier layers already corrected) give

.. math::

    b_c \leftarrow b_c + E[y_c] - E[\tilde y_c]

averaged over samples and spatial positions of channel :math:`c`. A
BN-fused layer adds the correction to its BN's :math:`\beta` (which the
folding adds to the folded bias unchanged).
"""
from typing import List, Optional, Sequence

import torch
from mmengine.logging import MMLogger
from torch import Tensor, fx, nn

from mmrazor_quant.models.fake_quants import (
    disable_fake_quant,
    disable_observer,
    enable_fake_quant,
    preserve_quant_state,
)
from mmrazor_quant.models.utils import tensor_graph_module
from mmrazor_quant.registry import TASK_UTILS
from .graph_utils import weighted_nodes
from .reconstruction import sample_inputs

__all__ = ['correct_bias', 'output_channel_means']


class _Stop(Exception):
    pass


def preactivation(module: nn.Module, x: Tensor) -> Tensor:
    """``module(x)`` without its fused ReLU (hooks are not run)."""
    module._with_relu = False  # instance attribute shadows the class one
    try:
        return module.forward(x)
    finally:
        del module.__dict__['_with_relu']


@torch.no_grad()
def output_channel_means(gm: fx.GraphModule, name: str, inputs: Tensor,
                         batch_size: int = 64) -> Tensor:
    """Per-channel mean of the pre-activation output of layer ``name`` when
    ``gm`` runs on ``inputs`` in its current quantization state."""
    module = gm.get_submodule(name)
    total, count = None, 0

    def hook(mod, args):
        nonlocal total, count
        out = preactivation(mod, args[0])
        # a linear layer's channels are last ([N, tokens, C] too)
        channel = out.dim() - 1 if isinstance(mod, nn.Linear) else 1
        dims = [d for d in range(out.dim()) if d != channel]
        part = out.sum(dims)
        total = part if total is None else total + part
        count += out.numel() // out.shape[channel]
        raise _Stop

    handle = module.register_forward_pre_hook(hook)
    try:
        for batch in inputs.split(batch_size):
            try:
                gm(batch)
            except _Stop:
                pass
    finally:
        handle.remove()
    return total / count


@torch.no_grad()
def _add_bias(module: nn.Module, delta: Tensor) -> None:
    bn = getattr(module, 'bn', None)
    if bn is not None and bn.bias is not None:
        bn.bias.add_(delta)
    elif module.bias is not None:
        module.bias.add_(delta)
    else:
        module.bias = nn.Parameter(delta.clone())


@TASK_UTILS.register_module()
def correct_bias(model: nn.Module,
                 data: Sequence[Tensor],
                 num_samples: int = 256,
                 batch_size: int = 64,
                 layers: Optional[Sequence[str]] = None,
                 seed: int = 0) -> List[str]:
    """Empirical bias correction of every QAT conv/linear, in place.

    Runs after calibration. The float means of all layers are taken first
    (the float model shares the biases being corrected); then each layer
    costs one forward pass over the samples up to that layer.

    Args:
        model (nn.Module): A calibrated ``MMArchitectureQuant`` or
            GraphModule.
        data (Sequence[Tensor]): Preprocessed calibration input batches.
        num_samples (int): Samples drawn from ``data``. Defaults to 256.
        batch_size (int): Forward batch size. Defaults to 64.
        layers (Sequence[str], optional): Module names to correct. Defaults
            to every QAT conv/linear.
        seed (int): Seed of the sample draw. Defaults to 0.

    Returns:
        list[str]: The corrected layers.
    """
    gm = tensor_graph_module(model)
    inputs = sample_inputs(data, num_samples, seed)
    names = [str(n.target) for n in weighted_nodes(gm)]
    if layers is not None:
        unknown = set(layers) - set(names)
        if unknown:
            raise ValueError(f'correct_bias: layers {sorted(unknown)} are '
                             f'not QAT conv/linear layers; known: {names}')
        names = [n for n in names if n in set(layers)]
    logger = MMLogger.get_current_instance()
    with preserve_quant_state(gm):
        gm.eval()
        disable_observer(gm)
        # The float model shares the biases being corrected: take all its
        # means first, while it is still the original.
        disable_fake_quant(gm)
        float_means = {
            name: output_channel_means(gm, name, inputs, batch_size)
            for name in names
        }
        enable_fake_quant(gm)
        for i, name in enumerate(names):
            float_mean = float_means[name]
            quant_mean = output_channel_means(gm, name, inputs, batch_size)
            delta = float_mean - quant_mean
            _add_bias(gm.get_submodule(name), delta)
            logger.info(f'PTQ correct_bias [{i + 1}/{len(names)}] {name}: '
                        f'mean |shift| {delta.abs().mean():.3g}')
    return names


correct_bias.stage = 'after_calibration'
