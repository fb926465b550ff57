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
from typing import Dict, List, Optional, Sequence

import torch
import torch.nn.functional as F
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
from mmrazor_quant.utils.model_inputs import Inputs, cat_inputs, split_inputs
from mmrazor_quant.utils.model_inputs import num_samples as count_samples
from .graph_utils import weighted_nodes
from .reconstruction import sample_indices, sample_inputs

__all__ = ['correct_bias', 'output_channel_means', 'all_output_channel_means',
           'OutputChannelMeans', 'record_float_means']


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
def output_channel_means(gm: fx.GraphModule, name: str, inputs: Inputs,
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
        for batch in split_inputs(inputs, batch_size):
            try:
                gm(batch)
            except _Stop:
                pass
    finally:
        handle.remove()
    return total / count


class OutputChannelMeans:
    """Records, while it is entered, the per-channel sums of each layer's
    pre-activation output for every sample of every forward of ``gm``
    (forward hooks; a fused ReLU is applied by the hook, so each layer runs
    once), so that :meth:`means` gives the means over all samples or over
    a subset of them.

    Attributes:
        num_samples (int): Samples that went through the first layer.
    """

    def __init__(self, gm: fx.GraphModule, names: Sequence[str]) -> None:
        self.names = list(names)
        self._modules = [gm.get_submodule(n) for n in self.names]
        # per layer: [samples, channels] sums, batch by batch
        self._sums: Dict[str, List[Tensor]] = {n: [] for n in self.names}
        self._counts: Dict[str, int] = {}
        self._handles: list = []
        self.num_samples = 0

    def _hook_of(self, name: str, first: bool):

        def hook(mod, args, out):
            sums, count = _sample_channel_sums(mod, out)
            self._sums[name].append(sums)
            self._counts[name] = count
            if first:
                self.num_samples += out.shape[0]
            return F.relu(out) if type(mod)._with_relu else out

        return hook

    def __enter__(self) -> 'OutputChannelMeans':
        self._handles = [
            m.register_forward_hook(self._hook_of(n, i == 0))
            for i, (n, m) in enumerate(zip(self.names, self._modules))]
        for module in self._modules:
            # an instance attribute shadows the class one: the hook sees
            # the pre-activation output
            module._with_relu = False
        return self

    def __exit__(self, *exc) -> None:
        for handle in self._handles:
            handle.remove()
        for module in self._modules:
            module.__dict__.pop('_with_relu', None)

    def means(self, samples: Optional[Tensor] = None) -> Dict[str, Tensor]:
        """``{layer: per-channel mean}`` of what was recorded.

        Args:
            samples (Tensor, optional): Indices of the samples to average,
                in the order they were recorded. Defaults to all.

        Raises:
            RuntimeError: Naming the layers no forward reached.
        """
        missing = [n for n in self.names if not self._sums[n]]
        if missing:
            raise RuntimeError(f'correct_bias: no sample reached {missing}')
        means = {}
        for name in self.names:
            sums = torch.cat(self._sums[name])
            if samples is not None:
                sums = sums[samples]
            means[name] = sums.sum(0) / (len(sums) * self._counts[name])
        return means


@torch.no_grad()
def all_output_channel_means(gm: fx.GraphModule, names: Sequence[str],
                             inputs: Inputs,
                             batch_size: int = 64) -> Dict[str, Tensor]:
    """:func:`output_channel_means` of every layer in ``names`` from one
    pass over ``inputs``."""
    with OutputChannelMeans(gm, names) as recorder:
        for batch in split_inputs(inputs, batch_size):
            gm(batch)
    return recorder.means()


def _channel_axis(module: nn.Module, out: Tensor) -> int:
    # a linear layer's channels are last ([N, tokens, C] too)
    return out.dim() - 1 if isinstance(module, nn.Linear) else 1


def _sample_channel_sums(module: nn.Module, out: Tensor):
    """``([samples, channels] sums of out, values per channel and
    sample)``: samples along dim 0."""
    channel = _channel_axis(module, out)
    if channel == 0:
        raise ValueError(f'correct_bias: {type(module).__name__} output '
                         f'{tuple(out.shape)} has no batch dimension')
    sums = out.sum([d for d in range(1, out.dim()) if d != channel]) \
        if out.dim() > 2 else out
    return sums, out.numel() // (out.shape[0] * out.shape[channel])


def _channel_sums(module: nn.Module, out: Tensor):
    """``(per-channel sum of out, values per channel)``."""
    channel = _channel_axis(module, out)
    return (out.sum([d for d in range(out.dim()) if d != channel]),
            out.numel() // out.shape[channel])


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
                 seed: int = 0,
                 single_pass: bool = False,
                 float_means: Optional[OutputChannelMeans] = None
                 ) -> List[str]:
    """Empirical bias correction of every QAT conv/linear, in place.

    Runs after calibration. The float means of all layers are taken first,
    in one pass (the float model shares the biases being corrected). Then,
    by default, layer by layer in graph order, each corrected after the
    layers before it (its shift includes what earlier layers' errors carry
    into it): one forward pass over the samples up to each layer.

    ``single_pass=True`` gives the same corrections from one pass: the
    samples go through the graph together, node by node, and each layer is
    corrected when they reach it (its input already carries the earlier
    corrections). It holds every sample's live activations at once instead
    of one batch's: for the small calibration sets of imported models
    (``apis.front_door`` uses it), not for 256 large images.

    Args:
        model (nn.Module): A calibrated ``MMArchitectureQuant`` or
            GraphModule.
        data (Sequence[Tensor]): Preprocessed calibration input batches.
        num_samples (int): Samples drawn from ``data``. Defaults to 256.
        batch_size (int): Forward batch size. Defaults to 64.
        layers (Sequence[str], optional): Module names to correct. Defaults
            to every QAT conv/linear.
        seed (int): Seed of the sample draw. Defaults to 0.
        single_pass (bool): Correct the layers in one pass holding all
            samples' activations. Defaults to False.
        float_means (OutputChannelMeans, optional): The float model's
            means, recorded while calibration ran it on the same samples
            (see :func:`record_float_means`); used when it saw as many
            samples as are drawn here, instead of a float pass of its own.

    Returns:
        list[str]: The corrected layers.
    """
    gm = tensor_graph_module(model)
    if data is not None and not isinstance(data, (Tensor, dict)):
        data = cat_inputs(data)
    inputs = sample_inputs(data, num_samples, seed)  # raises without data
    total = count_samples(data)
    picked = sample_indices(total, num_samples, seed)
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
        if _recorded_on(float_means, names, total):
            logger.info(f'PTQ correct_bias: float means of '
                        f'{count_samples(inputs)} of the {total} samples '
                        'calibration ran')
            means = float_means.means(picked)
        else:
            disable_fake_quant(gm)
            means = all_output_channel_means(gm, names, inputs, batch_size)
        enable_fake_quant(gm)
        if single_pass:
            _correct_in_one_pass(gm, names, means, inputs, batch_size)
            return names
        for i, name in enumerate(names):
            float_mean = means[name]
            quant_mean = output_channel_means(gm, name, inputs, batch_size)
            delta = float_mean - quant_mean
            _add_bias(gm.get_submodule(name), delta)
            logger.info(f'PTQ correct_bias [{i + 1}/{len(names)}] {name}: '
                        f'mean |shift| {delta.abs().mean():.3g}')
    return names


@torch.no_grad()
def _correct_in_one_pass(gm: fx.GraphModule, names: Sequence[str],
                         float_means: Dict[str, Tensor], inputs: Inputs,
                         batch_size: int) -> None:
    """Run the batches of ``inputs`` through ``gm`` node by node, side by
    side, correcting each layer of ``names`` when they reach it."""
    chunks = split_inputs(inputs, batch_size)
    runners = [fx.Interpreter(gm, garbage_collect_values=False)
               for _ in chunks]
    for runner, chunk in zip(runners, chunks):
        runner.args_iter = iter([chunk])
    last_use = {}
    for node in gm.graph.nodes:
        for arg in node.all_input_nodes:
            last_use[arg] = node
    wanted = set(names)
    logger = MMLogger.get_current_instance()
    done = 0
    for node in gm.graph.nodes:
        if node.op == 'call_module' and str(node.target) in wanted:
            name = str(node.target)
            module = gm.get_submodule(name)
            outs = [preactivation(module, runner.env[node.args[0]])
                    for runner in runners]
            sums = [_channel_sums(module, out) for out in outs]
            delta = float_means[name] - sum(p for p, _ in sums) / sum(
                c for _, c in sums)
            _add_bias(module, delta)
            done += 1
            logger.info(f'PTQ correct_bias [{done}/{len(names)}] {name}: '
                        f'mean |shift| {delta.abs().mean():.3g}')
            # the layer's output with its corrected bias, from the
            # pre-activation already computed
            shape = [1] * outs[0].dim()
            shape[_channel_axis(module, outs[0])] = -1
            for runner, out in zip(runners, outs):
                # in place: the pre-activation is this pass's own tensor
                out.add_(delta.view(shape))
                runner.env[node] = out.relu_() if type(module)._with_relu \
                    else out
                _free(runner, node, last_use)
            if done == len(names):
                break  # what follows the last layer changes no correction
            continue
        if node.op == 'output':
            break
        for runner in runners:
            runner.env[node] = runner.run_node(node)
            _free(runner, node, last_use)


def _free(runner: fx.Interpreter, node: fx.Node, last_use: dict) -> None:
    for arg in node.all_input_nodes:
        if last_use.get(arg) is node:
            del runner.env[arg]


def _recorded_on(float_means: Optional[OutputChannelMeans],
                 names: Sequence[str], total: int) -> bool:
    """Whether ``float_means`` holds every layer of ``names`` over as many
    samples as the data (``total``)."""
    return (float_means is not None and float_means.num_samples == total
            and set(names) <= set(float_means.names))


def record_float_means(model: nn.Module,
                       layers: Optional[Sequence[str]] = None,
                       **_) -> OutputChannelMeans:
    """The recorder of :func:`correct_bias`'s float means for a
    calibration of ``model`` (its fake quants off: the float model), given
    to ``correct_bias`` as ``float_means``. It saves the bias correction's
    float pass when calibration runs on the samples the correction draws
    (``apis.front_door``)."""
    gm = tensor_graph_module(model)
    names = [str(n.target) for n in weighted_nodes(gm)]
    if layers is not None:
        names = [n for n in names if n in set(layers)]
    return OutputChannelMeans(gm, names)


correct_bias.stage = 'after_calibration'
correct_bias.calibration_recorder = (record_float_means, 'float_means')
