"""Calibration and quantizer-state helpers shared by the loops."""
import copy
from typing import Any, Dict, Iterable, Optional

import torch
from mmengine.dist import is_main_process
from mmengine.logging import print_log
from mmengine.utils import ProgressBar
from torch import nn

from mmrazor_quant.models.fake_quants.utils import (
    check_calibrated,
    disable_fake_quant,
    disable_observer,
    enable_fake_quant,
    enable_observer,
)
from mmrazor_quant.models.qat_modules.utils import (
    freeze_bn_stats,
    update_bn_stats,
)

__all__ = [
    'calibrate', 'check_steps', 'check_begin', 'default_calibrate_cfg',
    'set_quant_state'
]


def check_steps(value: Any, key: str) -> int:
    """Return ``value`` if it is an int >= 1.

    Raises:
        ValueError: Naming ``key``, if ``value`` is not a positive int.
    """
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f'`{key}` must be an int >= 1, got {value!r}')
    return value


def check_begin(value: Any, key: str) -> int:
    """Return ``value`` if it is an int (``< 1`` means "never").

    Raises:
        TypeError: Naming ``key``, if ``value`` is not an int.
    """
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f'`{key}` must be an int (1-based epoch/iteration, '
                        f'-1 for never), got {value!r}')
    return value


def reached(begin: int, step: int) -> bool:
    """Whether the 0-based ``step`` is at or after the 1-based ``begin``.

    ``begin < 1`` never is reached, as in MMRazor (``-1`` is the default).
    """
    return begin > 0 and step + 1 >= begin


def default_calibrate_cfg(cfg) -> dict:
    """The default calibration loader: ``train_dataloader`` with the
    ``test_dataloader``'s pipeline.

    The test pipeline is deterministic and gives the inputs the deployed
    model will see (no random crops or flips); the training split keeps the
    evaluation data out of the qparams (principle 5 of
    docs/architecture.md). Datasets without a
    top-level ``pipeline`` (e.g. wrapped ones) keep the training pipeline.

    Args:
        cfg (Config | dict): The runner's config.

    Returns:
        dict: A dataloader config (a deep copy; ``cfg`` is not modified).

    Raises:
        ValueError: If ``cfg`` has no ``train_dataloader``: the validation
            set is never used silently.
    """
    train_loader = cfg.get('train_dataloader')
    if not train_loader:
        raise ValueError(
            'PTQLoop needs calibration data: set `calibrate_dataloader` in '
            'test_cfg, or a `train_dataloader` whose first `calibrate_steps` '
            'batches are used (the validation/test set is never used '
            'silently)')
    loader = copy.deepcopy(dict(train_loader))
    dataset = dict(loader.get('dataset', {}))
    test_loader = cfg.get('test_dataloader') or {}
    test_pipeline = (test_loader.get('dataset') or {}).get('pipeline')
    if test_pipeline is not None and 'pipeline' in dataset:
        dataset['pipeline'] = copy.deepcopy(test_pipeline)
        loader['dataset'] = dataset
    else:
        print_log(
            'PTQLoop: calibrating with the training pipeline (no test '
            'pipeline to swap in)',
            logger='current')
    return loader


def calibrate(model: nn.Module,
              dataloader: Iterable,
              steps: int,
              show_progress: bool = True) -> int:
    """Record activation and weight ranges on ``steps`` batches.

    The model runs in eval mode with every observer on and every fake
    quant off, so the observers see the float model's tensors (as with
    torch's observer-based PTQ) and the result does not depend on the
    order of the batches. Afterwards observers are off and fake quants on:
    the model is the quantized one.

    Each batch goes through ``model.calibrate_step`` (the DDP wrapper
    forwards it). Under ``torch.distributed`` the observers all-reduce their
    statistics in every step, so every rank must run the same number of
    steps; :class:`PTQLoop` checks that the loader is long enough.

    Args:
        model (nn.Module): An ``MMArchitectureQuant`` or its DDP wrapper.
        dataloader (Iterable): Yields data batches.
        steps (int): Number of batches to run.
        show_progress (bool): Show a progress bar on the main process.
            Defaults to True.

    Returns:
        int: The number of batches run.

    Raises:
        ValueError: If the loader ends before ``steps`` batches.
        RuntimeError: If some fake quant saw no data (``check_calibrated``).
    """
    check_steps(steps, 'calibrate_steps')
    model.eval()
    enable_observer(model)
    disable_fake_quant(model)
    bar = ProgressBar(steps) if show_progress and is_main_process() else None
    done = 0
    with torch.no_grad():
        for data_batch in dataloader:
            if done == steps:
                break
            model.calibrate_step(data_batch)
            done += 1
            if bar is not None:
                bar.update()
    if bar is not None:
        bar.file.write('\n')  # the bar leaves the cursor on its line
    disable_observer(model)
    enable_fake_quant(model)
    if done < steps:
        raise ValueError(f'`calibrate_dataloader` gave {done} batches, fewer '
                         f'than `calibrate_steps`={steps}')
    check_calibrated(model)
    return done


def set_quant_state(model: nn.Module, observers_on: bool,
                    bn_frozen: bool) -> None:
    """Fake quants on; observers and BN statistics as requested."""
    enable_fake_quant(model)
    if observers_on:
        enable_observer(model)
    else:
        disable_observer(model)
    if bn_frozen:
        freeze_bn_stats(model)
    else:
        update_bn_stats(model)


def mean_losses(losses: Dict[str, Any], prefix: str) -> Dict[str, float]:
    """Average the ``HistoryBuffer`` of each loss, keys ``prefix + name``."""
    return {prefix + name: buf.mean() for name, buf in losses.items()}


def loader_length(dataloader: Iterable) -> Optional[int]:
    """``len(dataloader)``, or None for loaders without a length."""
    try:
        return len(dataloader)  # type: ignore[arg-type]
    except TypeError:
        return None
