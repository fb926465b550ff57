"""Deploy heads: what the parity pipeline compares for a task.

The exported graph is always the model's ``tensor`` mode: for a classifier
its logits, for a detector the dense head's per-level outputs (decoding and
NMS stay outside the graph, as in mmdeploy). The parity pipeline
(:func:`~mmrazor_quant.deploy.parity.run_parity`) simulates, runs the
runtime and compares every output; a deploy head only says what else to
compare and how to summarise it (:meth:`BaseDeployHead.summarise`), and
may decode outputs into the predictions the config's metric reads
(:meth:`BaseDeployHead.predictions`), so that the check also gives the
simulation's and the runtime's metric on the test set. A
deploy head is registered in :data:`~mmrazor_quant.registry.DEPLOY_HEADS`
under a task name, and a model gets the one named by its codebase adapter's
``task``; a task without a head of its own gets ``'tensor'``.
"""
import copy
from typing import Dict, List, Optional, Sequence

from torch import Tensor, nn

from mmrazor_quant.models.codebases import codebase_of
from mmrazor_quant.registry import DEPLOY_HEADS
from .parity import Agreement, ParityReport, run_parity, top1_agreement

__all__ = ['BaseDeployHead', 'TensorDeployHead', 'deploy_head_of']


class BaseDeployHead:
    """What a task's parity check compares.

    Subclasses implement :meth:`summarise` and may refuse a model of
    another task in :meth:`check_model`.

    Attributes:
        task (str): For the report.
        batch_size (int, optional): Inputs run per call (None: all at
            once).
    """
    task: str = 'tensor'
    batch_size: Optional[int] = None

    def check_model(self, qmodel: nn.Module) -> None:
        """Raise ValueError if ``qmodel`` is not of this task. Defaults to
        accepting any model."""

    def summarise(self, qmodel: nn.Module, sim: List[Tensor],
                  runtime: List[Tensor], inputs: Tensor,
                  data_samples: Sequence) -> Agreement:
        """The task's agreement of the runtime's outputs with the
        simulation's (both flattened, in the file's output order)."""
        raise NotImplementedError

    def predictions(self, qmodel: nn.Module, outputs: List[Tensor],
                    inputs: Tensor, data_samples: Sequence) -> Optional[list]:
        """Copies of ``data_samples`` with the predictions decoded from
        ``outputs`` (flattened, in the file's output order), as the
        model's ``predict`` mode writes them, for the config's metric.
        None (the default) where the task decodes none here."""
        return None

    @property
    def decodes_predictions(self) -> bool:
        """Whether :meth:`predictions` decodes anything (a subclass
        overrides it)."""
        return type(self).predictions is not BaseDeployHead.predictions

    def metrics(self, evaluator, qmodel: nn.Module, outputs: List[Tensor],
                inputs: Tensor, data_samples: Sequence
                ) -> Dict[str, float]:
        """``evaluator``'s metrics of the predictions of ``outputs`` (empty
        where :meth:`predictions` gives none)."""
        samples = self.predictions(qmodel, outputs, inputs,
                                   copy.deepcopy(list(data_samples)))
        if not samples:
            return {}
        evaluator.process(samples)
        return evaluator.evaluate(len(samples))

    def check_parity(self, qmodel: nn.Module, deploy_model: nn.Module,
                     onnx_path: str, inputs: Tensor,
                     data_samples: Sequence, runtime: str,
                     evaluator=None, **options) -> ParityReport:
        """Run ``onnx_path`` in ``runtime`` and compare it with the
        simulation on ``inputs``.

        Args:
            qmodel (MMArchitectureQuant): The calibrated model (its heads
                decode the outputs).
            deploy_model (nn.Module): Its deploy model: what was exported,
                and what is simulated.
            onnx_path (str): The exported file.
            inputs (Tensor): A preprocessed batch.
            data_samples (Sequence): The data samples of ``inputs``.
            runtime (str): A registered runtime.
            evaluator (Evaluator, optional): The config's test metric:
                each of its figures of the simulation and of the runtime
                goes into the report's ``details`` (``simulated <name>``,
                ``<runtime> <name>``), where :meth:`predictions` decodes
                the outputs. Defaults to None.
            **options: The runtime's options.

        Returns:
            ParityReport: The comparison.
        """
        self.check_model(qmodel)

        def summary(sim, out):
            agreement = self.summarise(qmodel, sim, out, inputs,
                                       data_samples)
            if evaluator is not None:
                for who, outputs in (('simulated', sim), (runtime, out)):
                    found = self.metrics(evaluator, qmodel, outputs, inputs,
                                         data_samples)
                    agreement.details.update(
                        {f'{who} {k}': float(v) for k, v in found.items()})
            return agreement

        return run_parity(deploy_model, onnx_path, inputs, runtime, summary,
                          self.batch_size, task=self.task, **options)


@DEPLOY_HEADS.register_module(name=['tensor', 'classification'])
class TensorDeployHead(BaseDeployHead):
    """The tensor outputs compared as they are (SQNR, steps apart) and the
    first one's arg-max; with class labels in the data samples (read by the
    codebase adapter), the top-1 accuracies of both too."""
    task = 'classification'
    batch_size = 64

    def summarise(self, qmodel, sim, runtime, inputs, data_samples):
        architecture = getattr(qmodel, 'architecture', qmodel)
        labels = codebase_of(architecture).gt_labels(data_samples)
        return top1_agreement(sim, runtime, labels)


def deploy_head_of(qmodel: nn.Module) -> BaseDeployHead:
    """The deploy head of ``qmodel``'s task (``'tensor'`` if its task has
    none)."""
    architecture = getattr(qmodel, 'architecture', qmodel)
    task = codebase_of(architecture).task
    DEPLOY_HEADS.import_from_location()
    head = DEPLOY_HEADS.get(task) if task else None
    return (head or DEPLOY_HEADS.get('tensor'))()
