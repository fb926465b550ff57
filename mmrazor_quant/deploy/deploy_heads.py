"""Deploy heads: how the exported graph of a task is checked against the
simulation.

The exported graph is always the model's ``tensor`` mode: for a classifier
its logits, for a detector the dense head's per-level outputs (decoding and
NMS stay outside the graph, as in mmdeploy). A deploy head is registered in
:data:`~mmrazor_quant.registry.DEPLOY_HEADS` under a task name, and a model
gets the one named by its codebase adapter's ``task``; a task without a head
of its own gets ``'tensor'`` (outputs compared as they are).
"""
from typing import Sequence

from torch import Tensor, nn

from mmrazor_quant.models.codebases import codebase_of
from mmrazor_quant.registry import DEPLOY_HEADS
from .parity import check_parity

__all__ = ['BaseDeployHead', 'TensorDeployHead', 'deploy_head_of']


class BaseDeployHead:
    """Checks a task's exported model in a runtime against the simulation.

    Subclasses implement :meth:`check_parity`.
    """

    def check_parity(self, qmodel: nn.Module, deploy_model: nn.Module,
                     onnx_path: str, inputs: Tensor,
                     data_samples: Sequence, runtime: str, **options):
        """Run ``onnx_path`` in ``runtime`` and compare it with the
        simulation on ``inputs``.

        Args:
            qmodel (MMArchitectureQuant): The calibrated model.
            deploy_model (nn.Module): Its deploy model (what was exported).
            onnx_path (str): The exported file.
            inputs (Tensor): A preprocessed batch.
            data_samples (Sequence): The data samples of ``inputs``.
            runtime (str): ``'onnxruntime'`` or ``'openvino'``.
            **options: Passed to the runtime loader.

        Returns:
            A report with a ``format()`` method.
        """
        raise NotImplementedError


@DEPLOY_HEADS.register_module(name=['tensor', 'classification'])
class TensorDeployHead(BaseDeployHead):
    """The tensor outputs compared as they are (SQNR, steps apart); with
    class labels in the data samples (read by the codebase adapter), the
    top-1 accuracies of both too (:func:`check_parity`)."""

    def check_parity(self, qmodel, deploy_model, onnx_path, inputs,
                     data_samples, runtime, **options):
        architecture = getattr(qmodel, 'architecture', qmodel)
        labels = codebase_of(architecture).gt_labels(data_samples)
        return check_parity(deploy_model, onnx_path, inputs, runtime,
                            labels=labels, **options)


def deploy_head_of(qmodel: nn.Module) -> BaseDeployHead:
    """The deploy head of ``qmodel``'s task (``'tensor'`` if its task has
    none)."""
    architecture = getattr(qmodel, 'architecture', qmodel)
    task = codebase_of(architecture).task
    DEPLOY_HEADS.import_from_location()
    head = DEPLOY_HEADS.get(task) if task else None
    return (head or DEPLOY_HEADS.get('tensor'))()
