r"""Fast bias correction: the mean shift of each layer's weight grid,
computed from the float input's channel means (as NNCF's
``FastBiasCorrection``; Nagel et al., 2019, sec. 4.2 with :math:`E[x]`
measured).

A conv or linear layer :math:`y = W * x + b` whose weight is rounded to
:math:`W_q` shifts its output mean by

.. math::

    E[W * x] - E[W_q * x] = (W - W_q) * E[x]

(the op is linear). Taking :math:`E[x]` per input channel, broadcast over
the input's shape (so zero-padded borders weigh as the layer sees them),
one batch-1 forward of the layer with its weight fake quant off and on
gives the shift per output channel, added to the bias (to a fused BN's
:math:`\beta`).

The input means come from one float pass: the calibration pass itself
where the caller records during it (:func:`record_input_means`, as
``apis.front_door`` does), otherwise a pass of its own over the samples.
There is no quantized pass over the data. Unlike the empirical
:func:`~.bias_correction.correct_bias`, it does not correct the shift that
activation grids and earlier layers carry into a layer.
"""
from typing import Dict, List, Optional, Sequence, Tuple

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
from mmrazor_quant.utils.model_inputs import split_inputs
from .bias_correction import _add_bias, _channel_sums, preactivation
from .graph_utils import weighted_nodes
from .reconstruction import sample_inputs

__all__ = ['fast_correct_bias', 'InputChannelMeans', 'record_input_means']


def _input_channel_axis(module: nn.Module, x: Tensor) -> int:
    # a linear layer's input channels are last ([N, tokens, C] too)
    return x.dim() - 1 if isinstance(module, nn.Linear) else 1


class InputChannelMeans:
    """Records, while it is entered, the per-channel mean of each layer's
    input over every forward of ``gm`` (forward pre-hooks), and the shape
    of one input sample (the first seen).

    Attributes:
        num_samples (int): Samples that reached the first layer.
    """

    def __init__(self, gm: fx.GraphModule, names: Sequence[str]) -> None:
        self.names = list(names)
        self._modules = [gm.get_submodule(n) for n in self.names]
        self._totals: Dict[str, Tensor] = {}
        self._counts: Dict[str, int] = {}
        self._shapes: Dict[str, Tuple[int, ...]] = {}
        self._handles: list = []
        self.num_samples = 0

    def _hook_of(self, name: str, first: bool):

        def hook(mod, args):
            x = args[0].detach()
            axis = _input_channel_axis(mod, x)
            part = x.sum([d for d in range(x.dim()) if d != axis])
            totals = self._totals
            totals[name] = totals[name] + part if name in totals else part
            self._counts[name] = (self._counts.get(name, 0) +
                                  x.numel() // x.shape[axis])
            self._shapes.setdefault(name, tuple(x.shape[1:]))
            if first:
                self.num_samples += x.shape[0]

        return hook

    def __enter__(self) -> 'InputChannelMeans':
        self._handles = [
            m.register_forward_pre_hook(self._hook_of(n, i == 0))
            for i, (n, m) in enumerate(zip(self.names, self._modules))]
        return self

    def __exit__(self, *exc) -> None:
        for handle in self._handles:
            handle.remove()
        self._handles = []

    def means(self) -> Dict[str, Tuple[Tensor, Tuple[int, ...]]]:
        """``{layer: (per-channel input mean, sample shape)}``.

        Raises:
            RuntimeError: Naming the layers no forward reached.
        """
        missing = [n for n in self.names if n not in self._totals]
        if missing:
            raise RuntimeError(
                f'fast_correct_bias: no sample reached {missing}')
        return {n: (self._totals[n] / self._counts[n], self._shapes[n])
                for n in self.names}


def _mean_blob(module: nn.Module, mean: Tensor,
               shape: Tuple[int, ...]) -> Tensor:
    """A batch of one sample of ``shape`` holding ``mean`` along the
    layer's input channel axis."""
    view = [1] * (len(shape) + 1)
    axis = len(shape) if isinstance(module, nn.Linear) else 1
    view[axis] = -1
    return mean.view(view).expand(1, *shape).contiguous()


@torch.no_grad()
def weight_shift(module: nn.Module, mean: Tensor,
                 shape: Tuple[int, ...]) -> Tensor:
    """Per output channel, the mean of ``(W - W_q) * blob`` over a blob of
    the input mean: the float layer's output mean minus the quantized
    one's, for inputs of that mean."""
    blob = _mean_blob(module, mean, shape)
    fake_quant = module.weight_fake_quant
    with preserve_quant_state(module):
        disable_fake_quant(fake_quant)
        float_sum, count = _channel_sums(module, preactivation(module, blob))
        enable_fake_quant(fake_quant)
        quant_sum, _ = _channel_sums(module, preactivation(module, blob))
    return (float_sum - quant_sum) / count


@torch.no_grad()
def _record_float_pass(gm: fx.GraphModule, names: Sequence[str], inputs,
                       batch_size: int) -> InputChannelMeans:
    disable_fake_quant(gm)
    with InputChannelMeans(gm, names) as recorder:
        for batch in split_inputs(inputs, batch_size):
            gm(batch)
    return recorder


@TASK_UTILS.register_module()
def fast_correct_bias(model: nn.Module,
                      data: Sequence[Tensor],
                      num_samples: int = 256,
                      batch_size: int = 64,
                      layers: Optional[Sequence[str]] = None,
                      seed: int = 0,
                      input_means: Optional[InputChannelMeans] = None
                      ) -> List[str]:
    """Fast (analytic) bias correction of every QAT conv/linear, in place.

    Args:
        model (nn.Module): A calibrated ``MMArchitectureQuant`` or
            GraphModule.
        data (Sequence[Tensor]): Preprocessed calibration input batches
            (unused when ``input_means`` holds samples).
        num_samples (int): Samples drawn from ``data`` for the float pass.
            Defaults to 256.
        batch_size (int): Forward batch size of that pass. Defaults to 64.
        layers (Sequence[str], optional): Module names to correct. Defaults
            to every QAT conv/linear.
        seed (int): Seed of the sample draw. Defaults to 0.
        input_means (InputChannelMeans, optional): The float inputs'
            means, recorded while calibration ran (see
            :func:`record_input_means`), instead of a float pass.

    Returns:
        list[str]: The corrected layers.

    Raises:
        ValueError: If ``layers`` names a module that is not a QAT
            conv/linear.
    """
    gm = tensor_graph_module(model)
    names = _layer_names(gm, layers)
    logger = MMLogger.get_current_instance()
    with preserve_quant_state(gm):
        gm.eval()
        disable_observer(gm)
        if input_means is not None and input_means.num_samples > 0 \
                and set(names) <= set(input_means.names):
            logger.info(f'PTQ fast_correct_bias: input means recorded during '
                        f'calibration ({input_means.num_samples} samples)')
        else:
            input_means = _record_float_pass(
                gm, names, sample_inputs(data, num_samples, seed),
                batch_size)
        means = input_means.means()
        for i, name in enumerate(names):
            module = gm.get_submodule(name)
            delta = weight_shift(module, *means[name])
            _add_bias(module, delta)
            logger.info(f'PTQ fast_correct_bias [{i + 1}/{len(names)}] '
                        f'{name}: mean |shift| {delta.abs().mean():.3g}')
    return names


def _layer_names(gm: fx.GraphModule,
                 layers: Optional[Sequence[str]]) -> List[str]:
    names = [str(n.target) for n in weighted_nodes(gm)]
    if layers is None:
        return names
    unknown = set(layers) - set(names)
    if unknown:
        raise ValueError(f'fast_correct_bias: layers {sorted(unknown)} are '
                         f'not QAT conv/linear layers; known: {names}')
    return [n for n in names if n in set(layers)]


def record_input_means(model: nn.Module,
                       layers: Optional[Sequence[str]] = None,
                       **_) -> InputChannelMeans:
    """The recorder of :func:`fast_correct_bias`'s input means for a
    calibration of ``model`` (the float model), given to it as
    ``input_means``."""
    gm = tensor_graph_module(model)
    return InputChannelMeans(gm, _layer_names(gm, layers))


fast_correct_bias.stage = 'after_calibration'
fast_correct_bias.calibration_recorder = (record_input_means, 'input_means')
