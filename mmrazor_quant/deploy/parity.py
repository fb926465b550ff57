"""The parity pipeline: how closely an exported model, run in its real
runtime, follows the PyTorch simulation (the parity contract of
docs/architecture.md).

Written once for every task: the deploy model is run under the runtime's
arithmetic (:meth:`~mmrazor_quant.deploy.runtimes.BaseRuntime.simulation`),
the runtime runs the file on the same inputs, every output is compared (the
lowest SQNR, the largest difference in quantization steps), and the task's
deploy head says what else to compare (top-1 labels, decoded boxes,
keypoints, pixel labels) and how to summarise it in one agreement figure.
"""
import copy
from dataclasses import asdict, dataclass, field
from typing import Callable, Dict, Iterable, List, Optional, Sequence, Union

import numpy as np
import torch
from torch import Tensor, fx, nn

from mmrazor_quant.utils.model_inputs import (
    Inputs,
    inputs_to,
    inputs_to_numpy,
    split_inputs,
)
from mmrazor_quant.utils.sqnr import sqnr_db
from .int8_saturation import SATURATION_NOTE
from .qdq_fake_quantize import QDQFakeQuantize
from .runtimes import BaseRuntime, get_runtime

__all__ = [
    'ParityReport', 'Agreement', 'compare_outputs', 'check_parity',
    'run_parity', 'output_step', 'top1_agreement', 'flat_outputs'
]


@dataclass
class Agreement:
    """What a task compares beyond the raw outputs, summarised.

    Attributes:
        fraction (float): The share of the task's results the runtime
            reproduces (top-1 labels, boxes, keypoints, pixel labels).
        of (str): What ``fraction`` counts, for the report (``'top-1'``).
        sim_accuracy (float, optional): The simulation's accuracy against
            ground truth, when the task has labels.
        runtime_accuracy (float, optional): The runtime's.
        details (dict): Further figures by name (e.g. keypoint distances).
    """
    fraction: float
    of: str
    sim_accuracy: Optional[float] = None
    runtime_accuracy: Optional[float] = None
    details: Dict[str, float] = field(default_factory=dict)


#: Width of a figure's name in :meth:`ParityReport.format`.
_LABEL = 16


@dataclass
class ParityReport:
    """Agreement of a runtime's outputs with the simulation's; the same
    fields for every task.

    Attributes:
        runtime (str): A registered runtime (see :mod:`.runtimes`).
        task (str): The deploy head's task (``'tensor'``, ``'detection'``,
            ...).
        num_samples (int): Inputs compared.
        sqnr_db (float): The lowest SQNR over the outputs,
            ``10 log10(sum(y_sim^2) / sum((y_rt - y_sim)^2))`` in dB
            (``inf`` if identical, ``-inf`` for an all-zero simulation; see
            :func:`~mmrazor_quant.utils.sqnr.sqnr_db`).
        max_abs_diff (float): Largest absolute output difference.
        output_step (float): The quantization step of the last quantized
            tensor before the (first) output, the unit of
            ``max_step_diff``.
        max_step_diff (float): ``max_abs_diff / output_step``.
        agreement (float): The task's agreement (see :class:`Agreement`).
        agreement_of (str): What ``agreement`` counts.
        num_outputs (int): Outputs compared. Defaults to 1.
        sim_accuracy (float, optional): The simulation's accuracy, when the
            task has labels.
        runtime_accuracy (float, optional): The runtime's.
        details (dict): The task's further figures.
        int8_saturates (bool): The runtime ran int8 kernels on a CPU whose
            u8 x s8 products saturate (no VNNI, see
            :func:`~mmrazor_quant.deploy.int8_pairs_saturate`); the report
            then says so.
        float64_sqnr_db (float, optional): The simulation against itself
            computed in float64 (lowest over the outputs), when asked for:
            how far two exact evaluations of the same quantized model
            drift apart through float32 rounding alone. A model whose
            requantized layers amplify a last-bit difference into a
            one-step flip has a low figure here, and no runtime can agree
            with the simulation much better than it.
    """
    runtime: str
    task: str
    num_samples: int
    sqnr_db: float
    max_abs_diff: float
    output_step: float
    max_step_diff: float
    agreement: float
    agreement_of: str
    num_outputs: int = 1
    sim_accuracy: Optional[float] = None
    runtime_accuracy: Optional[float] = None
    details: Dict[str, float] = field(default_factory=dict)
    int8_saturates: bool = False
    float64_sqnr_db: Optional[float] = None

    def to_dict(self) -> dict:
        return asdict(self)

    def format(self) -> str:
        """One line per figure, for the command line."""
        lowest = ' (lowest of {} outputs)'.format(self.num_outputs) \
            if self.num_outputs > 1 else ''
        label = f'{{:{_LABEL}s}}: '.format
        lines = [
            f'parity with the simulation ({self.runtime}, '
            f'{self.num_samples} samples):',
            '  ' + label(f'{self.agreement_of} agreement') +
            f'{100 * self.agreement:.2f} %',
            f'  max |difference|: {self.max_abs_diff:.4g} '
            f'({self.max_step_diff:.2f} quantization steps of '
            f'{self.output_step:.4g})',
            f'  output SQNR     : {self.sqnr_db:.1f} dB{lowest}',
        ]
        if self.sim_accuracy is not None:
            lines.append('  ' + label(f'{self.agreement_of} accuracy') +
                         f'simulated {100 * self.sim_accuracy:.2f} %, '
                         f'deployed {100 * self.runtime_accuracy:.2f} %')
        lines += ['  ' + label(name) + f'{value:.4g}'
                  for name, value in self.details.items()]
        if self.float64_sqnr_db is not None:
            lines.append('  ' + label('float32 / 64') +
                         f'{self.float64_sqnr_db:.1f} dB (the simulation '
                         'against itself in float64)')
        if self.int8_saturates:
            lines.append(f'  note: {SATURATION_NOTE}')
        return '\n'.join(lines)


def output_step(model: nn.Module) -> float:
    """The scale of the last activation fake quant on the path to the
    (first) output, following first arguments back; 1.0 if there is none or
    ``model`` is not a GraphModule."""
    if not isinstance(model, fx.GraphModule):
        return 1.0
    modules = dict(model.named_modules())
    node = next(n for n in reversed(model.graph.nodes) if n.op == 'output')
    while node is not None:
        module = modules.get(str(node.target)) \
            if node.op == 'call_module' else None
        if isinstance(module, QDQFakeQuantize) and not module.is_per_channel:
            return float(module.scale)
        args = [a for a in node.all_input_nodes]
        node = args[0] if args else None
    return 1.0


def flat_outputs(outputs) -> List[Tensor]:
    """A model's nested outputs (a tensor, a head's per-level lists, a
    SimCC pair) flattened in the order ONNX export writes them."""
    if isinstance(outputs, (Tensor, np.ndarray)):
        return [torch.as_tensor(outputs)]
    return [t for item in outputs for t in flat_outputs(item)]


def top1_agreement(sim: Sequence[Tensor], runtime: Sequence[Tensor],
                   labels: Optional[np.ndarray] = None) -> Agreement:
    """The arg-max of the first output per sample, in both (and against
    ``labels`` when given): a classifier's summary."""
    if isinstance(labels, Tensor):
        labels = labels.numpy()
    ref = sim[0].double().numpy().reshape(len(sim[0]), -1)
    act = runtime[0].double().numpy().reshape(len(runtime[0]), -1)
    if labels is not None and len(labels) != len(ref):
        raise ValueError(f'labels: {len(labels)} labels for {len(ref)} '
                         'outputs')
    accuracies = (None, None) if labels is None else tuple(
        float((out.argmax(1) == np.asarray(labels)).mean())
        for out in (ref, act))
    return Agreement(float((ref.argmax(1) == act.argmax(1)).mean()),
                     'top-1', *accuracies)


#: How a deploy head summarises what it compares: ``(simulation outputs,
#: runtime outputs)`` to an :class:`Agreement`.
Summary = Callable[[List[Tensor], List[Tensor]], Agreement]


def compare_outputs(reference, actual, runtime: str = 'runtime',
                    step: float = 1.0,
                    labels: Optional[np.ndarray] = None,
                    summary: Optional[Summary] = None,
                    task: str = 'tensor') -> ParityReport:
    """Compare the simulation's outputs with a runtime's.

    Args:
        reference: Simulation outputs: an array or tensor, or a list of
            them (one per output, samples first).
        actual: The runtime's, alike.
        runtime (str): Name for the report. Defaults to ``'runtime'``.
        step (float): Unit of ``max_step_diff``. Defaults to 1.0.
        labels (np.ndarray, optional): ``(N,)`` class indices for the
            default summary (both top-1 accuracies). Defaults to None.
        summary (callable, optional): The task's :class:`Agreement` of the
            two output lists. Defaults to :func:`top1_agreement`.
        task (str): For the report. Defaults to ``'tensor'``.

    Raises:
        ValueError: If the numbers of outputs or their shapes differ, or
            there is no sample.
    """
    reference, actual = flat_outputs(reference), flat_outputs(actual)
    if len(reference) != len(actual):
        raise ValueError(f'the runtime gave {len(actual)} outputs, the '
                         f'simulation {len(reference)}')
    for i, (ref, act) in enumerate(zip(reference, actual)):
        if ref.shape != act.shape or ref.numel() == 0:
            raise ValueError(f'cannot compare output {i} of shapes '
                             f'{tuple(ref.shape)} (simulation) and '
                             f'{tuple(act.shape)} (runtime)')
    # Sums in float64 (sqnr_db), the lowest over the outputs: a detector's
    # coarsest level is as much the model as its finest.
    sqnr = min(sqnr_db(ref.numpy(), act.numpy())
               for ref, act in zip(reference, actual))
    max_abs = max(float(np.abs(act.double().numpy() -
                               ref.double().numpy()).max())
                  for ref, act in zip(reference, actual))
    if summary is None:
        agreement = top1_agreement(
            reference, actual,
            None if labels is None else np.asarray(labels))
    else:
        agreement = summary(reference, actual)
    return ParityReport(
        runtime=str(runtime), task=task, num_samples=len(reference[0]),
        sqnr_db=sqnr, max_abs_diff=max_abs, output_step=step,
        max_step_diff=max_abs / step, agreement=agreement.fraction,
        agreement_of=agreement.of, num_outputs=len(reference),
        sim_accuracy=agreement.sim_accuracy,
        runtime_accuracy=agreement.runtime_accuracy,
        details=dict(agreement.details))


def _batches(inputs: Union[Inputs, Iterable[Inputs]],
             batch_size: Optional[int]) -> List[Inputs]:
    if isinstance(inputs, (Tensor, dict)):
        chunks = [inputs] if batch_size is None else \
            split_inputs(inputs, batch_size)
    else:
        chunks = list(inputs)
    # a single input is the image batch: float, as the exporter saw it
    return [b.float().contiguous() if isinstance(b, Tensor) else
            inputs_to(b, torch.float32) for b in chunks]


def _joined(per_batch: List[List[Tensor]]) -> List[Tensor]:
    """Per-batch output lists joined along the samples, per output."""
    if len(per_batch) == 1:
        return per_batch[0]
    return [torch.cat(outs) for outs in zip(*per_batch)]


@torch.no_grad()
def run_parity(model: nn.Module,
               onnx_path: str,
               inputs: Union[Tensor, Iterable[Tensor]],
               runtime: Union[str, BaseRuntime] = 'onnxruntime',
               summary: Optional[Summary] = None,
               batch_size: Optional[int] = None,
               step: Optional[float] = None,
               task: str = 'tensor',
               float64_floor: bool = False,
               **runtime_options) -> ParityReport:
    """Simulate ``model`` under the runtime's arithmetic, run ``onnx_path``
    in the runtime on the same inputs, compare.

    Args:
        model (nn.Module): The simulation: the deploy model that was
            exported (or any module computing it), called as ``model(x)``.
        onnx_path (str): The exported model.
        inputs (Tensor | dict | Iterable): Preprocessed input batches, or
            one batch (split into ``batch_size`` chunks); a batch of a
            model with several inputs is a dict of tensors by input name.
        runtime (str | BaseRuntime): A registered runtime. Defaults to
            ``'onnxruntime'``.
        summary (callable, optional): The task's agreement (see
            :func:`compare_outputs`). Defaults to top-1.
        batch_size (int, optional): Chunk size for a tensor ``inputs``;
            None runs it as one batch. Defaults to None.
        step (float, optional): Unit of the step difference. Defaults to
            :func:`output_step` of ``model``.
        task (str): For the report. Defaults to ``'tensor'``.
        float64_floor (bool): Also run the simulation in float64 and report
            its agreement with the float32 one (``float64_sqnr_db``).
            Defaults to False.
        **runtime_options: Passed to the runtime's loader and simulation.

    Returns:
        ParityReport: The comparison.
    """
    plugin = get_runtime(runtime)
    model = model.eval()
    batches = _batches(inputs, batch_size)
    # The simulation runs first, not interleaved with the runtime: the two
    # thread pools would compete for the same cores.
    with plugin.simulation(model, **runtime_options) as simulation:
        sims = [flat_outputs(simulation(batch)) for batch in batches]
    run = plugin.load(onnx_path, **runtime_options)
    outs = [flat_outputs(run(inputs_to_numpy(batch))) for batch in batches]
    if step is None:
        step = output_step(model)
    try:
        report = compare_outputs(_joined(sims), _joined(outs), plugin.name,
                                 step, summary=summary, task=task)
    except ValueError as e:
        raise ValueError(f'{onnx_path} in {plugin.name}: {e}') from None
    report.int8_saturates = plugin.int8_saturates(**runtime_options)
    if float64_floor:
        report.float64_sqnr_db = _float64_sqnr(plugin, model, batches, sims,
                                               runtime_options)
    return report


def _float64_sqnr(plugin: BaseRuntime, model: nn.Module,
                  batches: List[Tensor], sims: List[List[Tensor]],
                  options: dict) -> float:
    """The lowest SQNR of the float32 simulation's outputs against the same
    simulation in float64 (see ``ParityReport.float64_sqnr_db``)."""
    model64 = copy.deepcopy(model).double()
    with plugin.simulation(model64, **options) as simulation:
        sims64 = [flat_outputs(simulation(inputs_to(batch, torch.float64)))
                  for batch in batches]
    return min(sqnr_db(ref.float(), sim)
               for ref, sim in zip(_joined(sims64), _joined(sims)))


def check_parity(model: nn.Module,
                 onnx_path: str,
                 inputs: Union[Tensor, Iterable[Tensor]],
                 runtime: Union[str, BaseRuntime] = 'onnxruntime',
                 batch_size: int = 64,
                 step: Optional[float] = None,
                 labels: Optional[Union[Tensor, np.ndarray]] = None,
                 **runtime_options) -> ParityReport:
    """:func:`run_parity` of a model whose first output is compared by its
    arg-max (a classifier; any tensor model).

    Args:
        model (nn.Module): The simulation (e.g. from
            :func:`build_deploy_model`).
        onnx_path (str): The exported model.
        inputs (Tensor | Iterable[Tensor]): Preprocessed input batches, or
            one tensor split into ``batch_size`` chunks.
        runtime (str | BaseRuntime): A registered runtime. Defaults to
            ``'onnxruntime'``.
        batch_size (int): Chunk size for a tensor ``inputs``. Defaults to
            64.
        step (float, optional): See :func:`run_parity`.
        labels (Tensor | np.ndarray, optional): Class indices of
            ``inputs`` (in order); adds both top-1 accuracies to the
            report. Defaults to None.
        **runtime_options: Passed to the runtime (e.g. ``optimize=False``
            for onnxruntime).

    Returns:
        ParityReport: The comparison.
    """
    def summary(sim, out):
        return top1_agreement(sim, out, labels)

    return run_parity(model, onnx_path, inputs, runtime, summary, batch_size,
                      step, **runtime_options)
