"""Graph-wise analysis: the whole model quantized, the error at each
quantized layer's output against the float model."""
import contextlib
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Dict, Iterator, List, Optional, Sequence

import torch
from mmengine.utils import ProgressBar
from torch import Tensor, nn

from mmrazor_quant.models.fake_quants.utils import (
    check_calibrated,
    disable_fake_quant,
    disable_observer,
    enable_fake_quant,
    preserve_quant_state,
)
from mmrazor_quant.models.utils import tensor_graph_module
from .layers import find_graph_fake_quants, find_quantized_layers
from .metrics import HIGHER_IS_BETTER, ErrorAccumulator, check_metric

__all__ = ['LayerError', 'graphwise_error', 'analysis_mode', 'worst_first']


@dataclass
class LayerError:
    """The error of one tensor of the quantized model.

    Attributes:
        name (str): Module name in the graph.
        kind (str): ``'layer'`` (a conv/linear output), ``'activation'``
            (an activation fake quant's output) or, in layer-wise analysis,
            the part quantized: ``'weight'``, ``'activation'``, ``'both'``.
        index (int): Position in graph order.
        snr (float): SNR in dB (see :func:`~.metrics.snr_db`).
        cosine (float): Cosine similarity.
        mse (float): Mean squared error.
        extra (dict): Anything else (e.g. the fake quants involved).
    """
    name: str
    kind: str
    index: int
    snr: float
    cosine: float
    mse: float
    extra: Dict[str, object] = field(default_factory=dict)

    def metric(self, name: str) -> float:
        return getattr(self, name)


@contextlib.contextmanager
def analysis_mode(model: nn.Module) -> Iterator[None]:
    """Eval mode, observers off, every fake quant's switches restored on
    exit; the model must be calibrated.

    Raises:
        RuntimeError: Naming the fake quants without qparams.
    """
    check_calibrated(model)
    with preserve_quant_state(model):
        model.eval()
        disable_observer(model)
        yield


class _OutputRecorder:
    """Forward hooks that keep float outputs, then compare quantized ones
    call by call (a module called twice per forward is compared twice)."""

    def __init__(self, modules: Dict[str, nn.Module]) -> None:
        self.phase = 'float'
        self.float_outputs: Dict[str, List[Tensor]] = defaultdict(list)
        self.cursor: Dict[str, int] = defaultdict(int)
        self.errors = {name: ErrorAccumulator() for name in modules}
        self.handles = [
            module.register_forward_hook(self._hook(name))
            for name, module in modules.items()
        ]

    def _hook(self, name: str):

        def hook(module, args, output):
            if not isinstance(output, Tensor):
                return
            if self.phase == 'float':
                self.float_outputs[name].append(output.detach().clone())
            else:
                i = self.cursor[name]
                self.cursor[name] += 1
                self.errors[name].update(self.float_outputs[name][i], output)

        return hook

    def start(self, phase: str) -> None:
        self.phase = phase
        if phase == 'float':
            self.float_outputs.clear()
            self.cursor.clear()

    def remove(self) -> None:
        for handle in self.handles:
            handle.remove()


def graphwise_error(model: nn.Module,
                    inputs: Sequence[Tensor],
                    show_progress: bool = False) -> List[LayerError]:
    r"""Quantize everything and measure, at the output of each quantized
    layer (QAT conv/linear) and of each activation fake quant, how far the
    quantized model's tensor is from the float model's.

    For each input batch the model runs twice through the shared modules of
    its ``tensor`` graph: once with every fake quant off (the float model,
    its outputs kept by forward hooks), once with every fake quant on. The
    errors accumulate over all batches (:class:`~.metrics.ErrorAccumulator`)
    so they include the error carried in from earlier layers; a *jump*
    between neighbours points at the layer that adds it.

    Args:
        model (nn.Module): A calibrated ``MMArchitectureQuant`` or quantized
            GraphModule (see
            :func:`~mmrazor_quant.models.utils.tensor_graph_module`).
        inputs (Sequence[Tensor]): Preprocessed input batches.
        show_progress (bool): Show a progress bar. Defaults to False.

    Returns:
        list[LayerError]: One record per tensor, in graph order.

    Raises:
        RuntimeError: If the model is not calibrated.
        ValueError: If ``inputs`` is empty.
    """
    if len(inputs) == 0:
        raise ValueError('graphwise_error needs at least one input batch')
    gm = tensor_graph_module(model)
    targets: Dict[str, nn.Module] = {}
    kinds: Dict[str, str] = {}
    for layer in find_quantized_layers(gm):
        targets[layer.name], kinds[layer.name] = layer.module, 'layer'
    for name, fake_quant in find_graph_fake_quants(gm):
        targets[name], kinds[name] = fake_quant, 'activation'
    order = {name: i for i, name in enumerate(_graph_order(gm, targets))}
    recorder = _OutputRecorder(targets)
    bar = ProgressBar(len(inputs)) if show_progress else None
    try:
        with analysis_mode(gm):
            for x in inputs:
                _run(gm, x, recorder, 'float')
                _run(gm, x, recorder, 'quant')
                if bar is not None:
                    bar.update()
    finally:
        recorder.remove()
        if bar is not None:
            bar.file.write('\n')
    records = []
    for name in sorted(targets, key=order.get):
        acc = recorder.errors[name]
        if acc.count == 0:
            continue  # not reached by the tensor graph (e.g. a loss branch)
        records.append(
            LayerError(name, kinds[name], order[name], **acc.result()))
    return records


def _run(gm: nn.Module, x: Tensor, recorder: _OutputRecorder,
         phase: str) -> None:
    (disable_fake_quant if phase == 'float' else enable_fake_quant)(gm)
    recorder.start(phase)
    with torch.no_grad():
        gm(x)


def _graph_order(gm, targets: Dict[str, nn.Module]) -> List[str]:
    names: List[str] = []
    for node in gm.graph.nodes:
        if node.op == 'call_module' and node.target in targets and \
                node.target not in names:
            names.append(str(node.target))
    return names


def worst_first(records: Sequence[LayerError], metric: str,
                higher_is_better: Optional[bool] = None) -> List[LayerError]:
    """``records`` sorted from the largest error to the smallest."""
    check_metric(metric)
    if higher_is_better is None:
        higher_is_better = HIGHER_IS_BETTER[metric]
    return sorted(
        records,
        key=lambda r: r.metric(metric),
        reverse=not higher_is_better)
