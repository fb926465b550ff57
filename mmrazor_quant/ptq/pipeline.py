"""Build PTQ passes from config and run them around calibration
(used by :class:`~mmrazor_quant.engine.PTQLoop`)."""
import contextlib
import time
from dataclasses import dataclass, field
from typing import Callable, Iterable, List, Optional, Sequence

import torch
from mmengine.logging import MMLogger
from mmengine.registry import DefaultScope
from torch import Tensor, nn

from mmrazor_quant.registry import TASK_UTILS

__all__ = ['PTQPass', 'build_ptq_passes', 'run_ptq_passes',
           'collect_inputs', 'recording_during_calibration', 'STAGES']

#: When a pass runs relative to calibration.
STAGES = ('before_calibration', 'after_calibration')


@dataclass
class PTQPass:
    """A pass built from config: ``fn(model, data, **kwargs)``, plus what
    it recorded during calibration (:func:`recording_during_calibration`).
    """
    name: str
    fn: Callable
    kwargs: dict = field(default_factory=dict)
    stage: str = 'after_calibration'
    recorded: dict = field(default_factory=dict)

    def __call__(self, model: nn.Module, data=None):
        return self.fn(model, data, **self.kwargs, **self.recorded)


def build_ptq_passes(cfgs: Optional[Sequence[dict]]) -> List[PTQPass]:
    """``[dict(type='qdrop', drop_prob=0.5, iters=200), ...]`` to passes.

    A ``type`` is a function registered in ``TASK_UTILS`` (``mmrazor_quant.``
    prefix optional); the other keys are its keyword arguments. A
    ``stage`` key overrides the pass's default stage.

    Raises:
        TypeError: If an entry is not a dict with ``type``.
        KeyError: If a ``type`` is not registered.
        ValueError: If a ``stage`` is unknown.
    """
    passes = []
    for i, cfg in enumerate(cfgs or []):
        if not isinstance(cfg, dict) or 'type' not in cfg:
            raise TypeError(f'ptq_passes[{i}] must be a dict with a `type`, '
                            f'got {cfg!r}')
        kwargs = dict(cfg)
        name = kwargs.pop('type')
        with DefaultScope.overwrite_default_scope('mmrazor_quant'):
            fn = TASK_UTILS.get(name)
        if fn is None:
            raise KeyError(
                f'ptq_passes[{i}]: `{name}` is not in the mmrazor_quant::task '
                'util registry. Known passes: equalize_cross_layer, '
                'correct_bias, adaround, brecq, qdrop')
        stage = kwargs.pop('stage', getattr(fn, 'stage', STAGES[1]))
        if stage not in STAGES:
            raise ValueError(f'ptq_passes[{i}].stage must be one of {STAGES}'
                             f', got {stage!r}')
        passes.append(PTQPass(str(name).split('.')[-1], fn, kwargs, stage))
    return passes


@torch.no_grad()
def collect_inputs(model: nn.Module, dataloader: Iterable,
                   steps: int) -> List[Tensor]:
    """The preprocessed inputs of the first ``steps`` batches."""
    module = getattr(model, 'module', model)
    inputs = []
    for i, batch in enumerate(dataloader):
        if i == steps:
            break
        inputs.append(module.data_preprocessor(batch, False)['inputs'])
    return inputs


def run_ptq_passes(model: nn.Module, passes: Sequence[PTQPass], stage: str,
                   data_fn: Callable[[], List[Tensor]]) -> None:
    """Run the passes of ``stage`` in order; ``data_fn`` gives the inputs
    (called at most once, only if a pass of the stage exists)."""
    logger = MMLogger.get_current_instance()
    data = None
    for ptq_pass in passes:
        if ptq_pass.stage != stage:
            continue
        if data is None:
            data = data_fn()
        logger.info(f'PTQ pass {ptq_pass.name} {ptq_pass.kwargs} ({stage})')
        start = time.time()
        ptq_pass(model, data)
        logger.info(f'PTQ pass {ptq_pass.name} took '
                    f'{time.time() - start:.1f} s')


@contextlib.contextmanager
def recording_during_calibration(model: nn.Module,
                                 passes: Sequence[PTQPass]):
    """Let the first after-calibration pass record what it needs from the
    float model while a calibration inside this block runs it, instead of
    running it again itself (bias correction's float means).

    A pass function opts in with ``fn.calibration_recorder = (make, key)``:
    ``make(model, **kwargs)`` is a context manager entered around the
    calibration, and the pass then gets it as its ``key`` argument. Use it
    only where calibration sees the samples the pass will draw (the pass
    checks the sample count): not with a shuffled or augmented loader.
    """
    first = next((p for p in passes if p.stage == STAGES[1]), None)
    spec = getattr(first.fn, 'calibration_recorder', None) \
        if first is not None else None
    if spec is None:
        yield
        return
    make, key = spec
    with make(model, **first.kwargs) as recorder:
        yield
    first.recorded = {key: recorder}
