"""Build a calibrated quantized model and data batches from a config,
without a Runner (used by ``tools/analyze.py`` and the benchmarks)."""
import copy
from itertools import islice
from typing import List, Optional, Tuple

import torch
from mmengine.config import Config
from mmengine.logging import print_log
from mmengine.registry import MODELS, init_default_scope
from mmengine.runner import Runner, load_state_dict
from torch import Tensor, nn

from mmrazor_quant.engine.runner.calibration import (
    calibrate,
    default_calibrate_cfg,
)
from mmrazor_quant.models.codebases import codebase_of
from mmrazor_quant.models.fake_quants.utils import (
    check_calibrated,
    disable_observer,
    enable_fake_quant,
)
from mmrazor_quant.models.utils import tensor_graph_module
from mmrazor_quant.utils import read_checkpoint
from mmrazor_quant.utils.data_pipeline import with_test_pipeline

__all__ = [
    'load_checkpoint_state', 'is_quantized_state', 'build_quant_model',
    'build_loader', 'collect_batches', 'top1_accuracy'
]

Batch = Tuple[Tensor, Tensor]


def load_checkpoint_state(path: str) -> dict:
    """The state dict of an mmengine checkpoint, read with
    ``weights_only=True`` (see :mod:`mmrazor_quant.utils.checkpoint`)."""
    checkpoint = read_checkpoint(path)
    state = checkpoint.get('state_dict', checkpoint) if isinstance(
        checkpoint, dict) else None
    if not isinstance(state, dict):
        raise TypeError(f'{path} holds no state dict')
    return state


def is_quantized_state(state: dict) -> bool:
    """Whether a state dict holds fake-quant qparams (a PTQ/QAT checkpoint)
    rather than float weights only."""
    return any('fake_quant' in key for key in state)


def _strip(state: dict, prefix: str) -> dict:
    if all(k.startswith(prefix) for k in state):
        return {k[len(prefix):]: v for k, v in state.items()}
    return state


def build_quant_model(cfg: Config,
                      checkpoint: Optional[str] = None,
                      model_cfg: Optional[dict] = None,
                      calibrate_steps: Optional[int] = None,
                      show_progress: bool = True) -> nn.Module:
    """An ``MMArchitectureQuant`` from ``cfg.model``, ready to run.

    ``checkpoint`` decides how the qparams come about:

    * a quantized checkpoint (``model_ptq.pth`` of ``tools/ptq.py``, or a
      QAT checkpoint) is loaded as is;
    * a float checkpoint (or none: the config's ``float_checkpoint``) is
      loaded into the architecture, and the model is calibrated on the
      config's calibration data (``test_cfg.calibrate_dataloader``, else the
      training set with the test pipeline; never the test set) for
      ``test_cfg.calibrate_steps`` batches, as ``PTQLoop`` would.

    Args:
        cfg (Config): A quantization config.
        checkpoint (str, optional): Defaults to the ``float_checkpoint``.
        model_cfg (dict, optional): Replaces ``cfg.model`` (e.g. with other
            ``qconfig_mapping`` rules). Defaults to None.
        calibrate_steps (int, optional): Overrides the config's.
        show_progress (bool): Calibration progress bar. Defaults to True.

    Returns:
        nn.Module: The calibrated model in eval mode, observers off.

    Raises:
        ValueError: If there is neither ``checkpoint`` nor
            ``float_checkpoint``.
    """
    init_default_scope(cfg.get('default_scope', 'mmcls'))
    model_cfg = copy.deepcopy(
        dict(with_test_pipeline(model_cfg or cfg.model, cfg)))
    float_checkpoint = model_cfg.pop('float_checkpoint', None)
    checkpoint = checkpoint or float_checkpoint
    if not checkpoint:
        raise ValueError('no checkpoint: pass CHECKPOINT or set '
                         'model.float_checkpoint in the config')
    state = load_checkpoint_state(checkpoint)
    quantized = is_quantized_state(state)
    architecture = MODELS.build(model_cfg.pop('architecture'))
    if not quantized:
        # Float weights go into the architecture before it is quantized.
        load_state_dict(architecture, _strip(state, 'architecture.'))
    model = MODELS.build(dict(model_cfg, architecture=architecture))
    model.eval()
    if quantized:
        load_state_dict(model, state)
        disable_observer(model)
        enable_fake_quant(model)
        check_calibrated(model)
        return model
    test_cfg = cfg.get('test_cfg') or {}
    steps = calibrate_steps or test_cfg.get('calibrate_steps', 32)
    loader_cfg = test_cfg.get('calibrate_dataloader') or \
        default_calibrate_cfg(cfg)
    print_log(f'analysis: {checkpoint} is a float checkpoint; calibrating '
              f'on {steps} batches', logger='current')
    calibrate(model, build_loader(loader_cfg), steps, show_progress)
    return model


def build_loader(loader_cfg: dict):
    """A dataloader from its config (the default scope must be set)."""
    return Runner.build_dataloader(copy.deepcopy(dict(loader_cfg)))


def collect_batches(model: nn.Module, loader, steps: Optional[int]
                    ) -> List[Batch]:
    """The first ``steps`` batches (all if None) of ``loader`` through the
    model's data preprocessor, as ``(inputs, labels)``."""
    model = getattr(model, 'module', model)
    codebase = codebase_of(getattr(model, 'architecture', model))
    batches = []
    with torch.no_grad():
        for data in islice(loader, steps):
            data = model.data_preprocessor(data, False)
            labels = codebase.gt_labels(data.get('data_samples') or [])
            if labels is None:
                labels = torch.empty(0, dtype=torch.long)
            batches.append((data['inputs'], labels))
    if not batches:
        raise ValueError('the dataloader gave no batch')
    return batches


def top1_accuracy(model: nn.Module, batches: List[Batch]) -> float:
    """Top-1 (in %) of the ``tensor``-mode logits over ``batches``."""
    gm = tensor_graph_module(model)
    correct = total = 0
    with torch.no_grad():
        for x, labels in batches:
            correct += int((gm(x).argmax(-1) == labels).sum())
            total += labels.numel()
    return 100.0 * correct / max(total, 1)
