"""How closely an exported model, run in its real runtime, follows the
PyTorch simulation (see the data path in docs/architecture.md)."""
from dataclasses import asdict, dataclass
from typing import Iterable, Optional, Union

import numpy as np
import torch
from torch import Tensor, fx

from mmrazor_quant.utils.sqnr import sqnr_db
from .int8_saturation import SATURATION_NOTE, int8_pairs_saturate
from .qdq_fake_quantize import QDQFakeQuantize
from .runtime_arithmetic import runtime_arithmetic
from .runtimes import load_runtime

__all__ = ['ParityReport', 'compare_outputs', 'check_parity', 'output_step']


@dataclass
class ParityReport:
    """Agreement of a runtime's outputs with the simulation's.

    Attributes:
        runtime (str): A registered runtime (see :mod:`.runtimes`).
        num_samples (int): Inputs compared.
        top1_agreement (float): Fraction of inputs whose arg-max matches.
        max_abs_diff (float): Largest absolute output difference.
        output_step (float): The quantization step of the last quantized
            tensor before the output (the unit of ``max_step_diff``).
        max_step_diff (float): ``max_abs_diff / output_step``.
        sqnr_db (float): Output SQNR, ``10 log10(sum(y_sim^2) /
            sum((y_rt - y_sim)^2))`` in dB (``inf`` if identical, ``-inf``
            for an all-zero simulation; see
            :func:`~mmrazor_quant.utils.sqnr.sqnr_db`).
        sim_accuracy (float, optional): Top-1 accuracy of the simulation,
            when labels were given.
        runtime_accuracy (float, optional): Top-1 accuracy of the runtime,
            when labels were given.
        int8_saturates (bool): The runtime ran int8 kernels on a CPU whose
            u8 x s8 products saturate (no VNNI, see
            :func:`~mmrazor_quant.deploy.int8_pairs_saturate`); the report
            then says so.
    """
    runtime: str
    num_samples: int
    top1_agreement: float
    max_abs_diff: float
    output_step: float
    max_step_diff: float
    sqnr_db: float
    sim_accuracy: Optional[float] = None
    runtime_accuracy: Optional[float] = None
    int8_saturates: bool = False

    def to_dict(self) -> dict:
        return asdict(self)

    def format(self) -> str:
        """One line per figure, for the command line."""
        lines = [
            f'parity with the simulation ({self.runtime}, '
            f'{self.num_samples} samples):',
            f'  top-1 agreement : {100 * self.top1_agreement:.2f} %',
            f'  max |difference|: {self.max_abs_diff:.4g} '
            f'({self.max_step_diff:.2f} quantization steps of '
            f'{self.output_step:.4g})',
            f'  output SQNR     : {self.sqnr_db:.1f} dB',
        ]
        if self.sim_accuracy is not None:
            lines.append(f'  top-1 accuracy  : simulated '
                         f'{100 * self.sim_accuracy:.2f} %, deployed '
                         f'{100 * self.runtime_accuracy:.2f} %')
        if self.int8_saturates:
            lines.append(f'  note: {SATURATION_NOTE}')
        return '\n'.join(lines)


def output_step(model: fx.GraphModule) -> float:
    """The scale of the last activation fake quant on the path to the
    output (following first arguments back), or 1.0 if there is none."""
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


def compare_outputs(reference: np.ndarray,
                    actual: np.ndarray,
                    runtime: str = 'runtime',
                    step: float = 1.0,
                    labels: Optional[np.ndarray] = None) -> ParityReport:
    """Compare two ``(N, num_classes)`` output arrays.

    Args:
        reference (np.ndarray): Simulation outputs.
        actual (np.ndarray): Runtime outputs.
        runtime (str): Name for the report. Defaults to ``'runtime'``.
        step (float): Unit of ``max_step_diff``. Defaults to 1.0.
        labels (np.ndarray, optional): ``(N,)`` class indices; adds both
            top-1 accuracies to the report. Defaults to None.

    Raises:
        ValueError: If the shapes differ or there is no sample.
    """
    reference = np.asarray(reference, dtype=np.float64)
    actual = np.asarray(actual, dtype=np.float64)
    if reference.shape != actual.shape or reference.size == 0:
        raise ValueError(f'cannot compare outputs of shapes '
                         f'{reference.shape} and {actual.shape}')
    if labels is not None and len(labels) != len(reference):
        raise ValueError(f'labels: {len(labels)} labels for '
                         f'{len(reference)} outputs')
    flat_ref = reference.reshape(len(reference), -1)
    flat_act = actual.reshape(len(actual), -1)
    max_abs = float(np.abs(flat_act - flat_ref).max())
    accuracies = (None, None) if labels is None else tuple(
        float((out.argmax(1) == np.asarray(labels)).mean())
        for out in (flat_ref, flat_act))
    return ParityReport(
        runtime=runtime,
        num_samples=len(reference),
        top1_agreement=float(
            (flat_ref.argmax(1) == flat_act.argmax(1)).mean()),
        max_abs_diff=max_abs,
        output_step=step,
        max_step_diff=max_abs / step,
        sqnr_db=sqnr_db(flat_ref, flat_act),
        sim_accuracy=accuracies[0],
        runtime_accuracy=accuracies[1])


def _batches(inputs: Union[Tensor, Iterable[Tensor]],
             batch_size: int) -> Iterable[Tensor]:
    if isinstance(inputs, Tensor):
        yield from inputs.split(batch_size)
    else:
        yield from inputs


@torch.no_grad()
def check_parity(model: fx.GraphModule,
                 onnx_path: str,
                 inputs: Union[Tensor, Iterable[Tensor]],
                 runtime: str = 'onnxruntime',
                 batch_size: int = 64,
                 step: Optional[float] = None,
                 labels: Optional[Union[Tensor, np.ndarray]] = None,
                 **runtime_options) -> ParityReport:
    """Run ``onnx_path`` in ``runtime`` and ``model`` (the deploy model, or
    any module computing the simulation) on the same inputs and compare.

    Args:
        model (fx.GraphModule): The simulation (e.g. from
            :func:`build_deploy_model`), called as ``model(x)``.
        onnx_path (str): The exported model.
        inputs (Tensor | Iterable[Tensor]): Preprocessed input batches, or
            one tensor split into ``batch_size`` chunks.
        runtime (str): A registered runtime (see :mod:`.runtimes`).
            Defaults to ``'onnxruntime'``.
        batch_size (int): Chunk size for a tensor ``inputs``. Defaults to 64.
        step (float, optional): Unit of the step difference. Defaults to
            :func:`output_step` of ``model``.
        labels (Tensor | np.ndarray, optional): Class indices of
            ``inputs`` (in order); adds both top-1 accuracies to the
            report. Defaults to None.
        **runtime_options: Passed to the runtime loader (e.g.
            ``optimize=False`` for onnxruntime).

    Returns:
        ParityReport: The comparison.
    """
    model = model.eval()
    batches = [b.float().contiguous() for b in _batches(inputs, batch_size)]
    # The simulation runs first, not interleaved with the runtime: the two
    # thread pools would compete for the same cores.
    with runtime_arithmetic(model, runtime):
        sims = [model(batch).numpy() for batch in batches]
    run = load_runtime(runtime, onnx_path, **runtime_options)
    outs = [run(batch.numpy()) for batch in batches]
    if step is None:
        step = output_step(model) if isinstance(model, fx.GraphModule) \
            else 1.0
    if isinstance(labels, Tensor):
        labels = labels.numpy()
    report = compare_outputs(
        np.concatenate(sims), np.concatenate(outs), runtime, step, labels)
    report.int8_saturates = runs_int8_kernels(
        runtime, **runtime_options) and int8_pairs_saturate()
    return report


def runs_int8_kernels(runtime: str, optimize: bool = True,
                      qdq_fusion: bool = True, **_) -> bool:
    """Whether ``runtime`` with these options fuses Q/DQ into int8
    kernels: a runtime does unless its options turn graph optimization or
    the Q/DQ fusion off (onnxruntime's ``optimize``, ``qdq_fusion``)."""
    return optimize and qdq_fusion
