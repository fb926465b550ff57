"""Build the deploy model: the tensor-mode graph with BN folded and every
fake quant frozen."""
import copy
from typing import List

from torch import fx, nn

from mmrazor_quant.models.fake_quants import (
    BaseFakeQuantize,
    check_calibrated,
    named_fake_quants,
)
from mmrazor_quant.models.qat_modules import is_qat_module
from mmrazor_quant.models.utils import tensor_graph_module
from .qdq_fake_quantize import QDQFakeQuantize
from .weight_quantized_layer import from_qat_module

__all__ = ['build_deploy_model']


def _check_enabled(model: nn.Module) -> None:
    """Deploy quantizes everywhere the graph has a fake quant; a disabled one
    would make the simulation float there and the two disagree."""
    disabled = [
        name for name, fq in named_fake_quants(model)
        if not int(fq.fake_quant_enabled[0])
    ]
    if disabled:
        raise RuntimeError(
            f'{len(disabled)} fake quant(s) are disabled: {disabled}. Enable '
            'fake quantization (enable_fake_quant) before deploying: the '
            'deployed model quantizes every tensor the graph marks')


def _swap(gm: fx.GraphModule, name: str, new: nn.Module) -> None:
    parent_name, _, attr = name.rpartition('.')
    parent = gm.get_submodule(parent_name) if parent_name else gm
    setattr(parent, attr, new)


def _called_modules(gm: fx.GraphModule) -> List[str]:
    return [str(n.target) for n in gm.graph.nodes if n.op == 'call_module']


def build_deploy_model(qmodel: nn.Module) -> fx.GraphModule:
    """A standalone copy of ``qmodel``'s tensor-mode graph for deployment.

    * QAT modules become :class:`WeightQuantizedLayer` (float conv/linear
      with BN folded by running statistics, ReLU kept, weight on the grid,
      :class:`QDQFakeQuantize` on it);
    * activation fake quants become :class:`QDQFakeQuantize` with the
      fixed qparams of :meth:`BaseFakeQuantize.get_qparams` (learned
      LSQ/LSQ+/PACT scales included).

    Its output equals ``qmodel(x, mode='tensor')`` in eval mode (to float
    rounding of the BN folding, ~1e-6 relative). ``qmodel`` is not modified.

    Args:
        qmodel (MMArchitectureQuant): A calibrated quantized model traced
            with the ``'tensor'`` forward mode, its DDP wrapper, or that
            mode's GraphModule.

    Returns:
        fx.GraphModule: In eval mode, taking the preprocessed input tensor.

    Raises:
        TypeError: If ``qmodel`` is neither a quantized model nor a
            GraphModule.
        ValueError: If ``qmodel`` has no tensor-mode graph.
        RuntimeError: Listing fake quants that were never calibrated, or
            that are disabled.
    """
    gm = tensor_graph_module(qmodel)
    check_calibrated(gm)
    _check_enabled(gm)
    # deepcopy copies exactly the modules the graph calls, so the result
    # shares nothing with the training model.
    deployed = copy.deepcopy(gm).eval()
    for name in dict.fromkeys(_called_modules(deployed)):
        module = deployed.get_submodule(name)
        if is_qat_module(module):
            _swap(deployed, name, from_qat_module(module))
        elif isinstance(module, BaseFakeQuantize):
            _swap(deployed, name, QDQFakeQuantize.from_fake_quant(module))
    deployed.recompile()
    return deployed
