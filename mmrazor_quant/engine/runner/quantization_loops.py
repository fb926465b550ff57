"""Runner loops for post-training quantization and quantization-aware
training, with MMRazor's names and arguments.

* :class:`PTQLoop` (``test_cfg``): calibrate, save ``model_ptq.pth``,
  evaluate.
* :class:`QATEpochBasedLoop` / :class:`QATIterBasedLoop` (``train_cfg``):
  train with fake quants, switching observers off and freezing BN
  statistics at a given epoch / iteration.
* :class:`LSQEpochBasedLoop` (``train_cfg``): observers only on the first
  iteration (LSQ's static scale initialisation), then learned scales.
* :class:`QATValLoop` (``val_cfg``): metrics of the quantized (``qat.``)
  and of the float (``original.``) model.

Every switch is derived from the epoch or iteration number at the start of
each epoch / iteration, so a resumed run sets the same state as an
uninterrupted one.

With ``compile`` in the config (mmengine's option, e.g. ``compile=True``),
mmengine compiles ``train_step`` and these loops compile ``val_step``,
``test_step`` and ``calibrate_step`` with the same options (see
:mod:`.compile`); a switch that flips recompiles once.
"""
import os.path as osp
import time
from typing import Dict, List, Optional, Sequence, Tuple, Union

import mmengine
from mmengine.dist import master_only
from mmengine.evaluator import Evaluator
from mmengine.runner import (
    EpochBasedTrainLoop,
    IterBasedTrainLoop,
    TestLoop,
    ValLoop,
)
from mmengine.runner.checkpoint import (
    get_state_dict,
    save_checkpoint,
    weights_to_cpu,
)
from torch.utils.data import DataLoader

from mmrazor_quant.models.algorithms.quant_state_format import quant_state_meta
from mmrazor_quant.models.fake_quants.utils import (
    check_calibrated,
    disable_fake_quant,
    disable_observer,
    enable_fake_quant,
    preserve_quant_state,
)
from mmrazor_quant.registry import LOOPS
from mmrazor_quant.utils.cpu_heap import reuse_freed_memory
from .calibration import (
    calibrate,
    check_begin,
    check_steps,
    default_calibrate_cfg,
    loader_length,
    mean_losses,
    reached,
    set_quant_state,
)
from .checkpoint_meta import add_quant_state_meta_hook
from .compile import check_compile_cfg, compile_steps

__all__ = [
    'PTQLoop', 'QATEpochBasedLoop', 'LSQEpochBasedLoop', 'QATIterBasedLoop',
    'QATValLoop'
]

#: File name of the calibrated model that :class:`PTQLoop` writes.
PTQ_CHECKPOINT = 'model_ptq.pth'


@LOOPS.register_module()
class PTQLoop(TestLoop):
    """Post-training quantization: calibrate, save, then test.

    ``run`` puts the model in eval mode, switches observers on and fake
    quants off, runs ``calibrate_steps`` batches of ``calibrate_dataloader``
    through ``model.calibrate_step`` (with a progress bar), then switches
    observers off and fake quants on and checks that every fake quant got
    qparams. It writes ``<work_dir>/model_ptq.pth`` (an mmengine checkpoint:
    ``meta`` and ``state_dict``, which ``tools/test.py`` and ``load_from``
    read) and evaluates the quantized model on ``dataloader``.

    Examples:
        >>> test_cfg = dict(type='mmrazor_quant.PTQLoop',
        ...                 calibrate_steps=32)      # 32 training batches
        >>> # evaluate a saved result without calibrating again:
        >>> test_cfg = dict(type='mmrazor_quant.PTQLoop', only_val=True)

    Args:
        runner (Runner): The runner.
        dataloader (DataLoader | dict): The test data.
        evaluator (Evaluator | dict | list): The test metrics.
        calibrate_dataloader (DataLoader | dict, optional): The calibration
            data. Defaults to None: ``train_dataloader`` with the test
            pipeline (never the test set; principle 5 of docs/architecture.md).
        calibrate_steps (int): Calibration batches. Under
            ``torch.distributed`` each rank runs this many batches of its
            own shard. Defaults to 32.
        only_val (bool): Skip calibration and saving: evaluate a calibrated
            checkpoint given by ``load_from`` (``--checkpoint``). Defaults to
            False.
        fp16 (bool): Evaluate under autocast. Defaults to False.
        ptq_passes (list[dict], optional): Advanced PTQ passes of
            :mod:`mmrazor_quant.ptq`, run in order: those of stage
            ``'before_calibration'`` (e.g. ``equalize_cross_layer``) before
            calibrating, the others (``correct_bias``, ``adaround``,
            ``brecq``, ``qdrop``) after it, on the preprocessed inputs of
            the ``calibrate_steps`` calibration batches. E.g.
            ``[dict(type='qdrop', drop_prob=0.5, iters=200)]``. Defaults to
            None (plain calibration).

    Raises:
        ValueError: If ``calibrate_steps`` is not an int >= 1, if
            ``calibrate_dataloader`` is empty, or if there is neither
            ``calibrate_dataloader`` nor ``train_dataloader``. A loader
            with fewer than ``calibrate_steps`` batches is used whole, with
            a warning.
    """

    def __init__(self,
                 runner,
                 dataloader: Union[DataLoader, Dict],
                 evaluator: Union[Evaluator, Dict, List],
                 calibrate_dataloader: Optional[Union[DataLoader,
                                                      Dict]] = None,
                 calibrate_steps: int = 32,
                 only_val: bool = False,
                 fp16: bool = False,
                 ptq_passes: Optional[List[dict]] = None) -> None:
        super().__init__(runner, dataloader, evaluator, fp16)
        self.calibrate_steps = check_steps(calibrate_steps, 'calibrate_steps')
        self.only_val = bool(only_val)
        self.ptq_passes = []
        if ptq_passes:
            from mmrazor_quant.ptq import build_ptq_passes
            self.ptq_passes = build_ptq_passes(ptq_passes)
        self.calibrate_dataloader = None
        if not self.only_val:
            self.calibrate_dataloader = self._build_calibrate_dataloader(
                calibrate_dataloader)

    def _build_calibrate_dataloader(
            self, dataloader: Optional[Union[DataLoader, Dict]]) -> DataLoader:
        """Build (by default from the training config) and check the
        calibration loader."""
        if dataloader is None:
            dataloader = default_calibrate_cfg(self.runner.cfg)
        elif isinstance(dataloader, dict) and 'dataset' not in dataloader:
            dataloader = _overridden_default_cfg(self.runner, dataloader)
        if isinstance(dataloader, dict):
            dataloader = self.runner.build_dataloader(
                dataloader, seed=self.runner.seed)
        num_batches = loader_length(dataloader)
        dataset = getattr(dataloader, 'dataset', None)
        if num_batches == 0 or (dataset is not None and len(dataset) == 0):
            raise ValueError('`calibrate_dataloader` is empty: PTQ needs at '
                             'least one calibration batch')
        if num_batches is not None and num_batches < self.calibrate_steps:
            # As MMRazor: calibrate on what there is, but say so.
            self.runner.logger.warning(
                f'PTQ: `calibrate_steps`={self.calibrate_steps} is larger '
                f'than `calibrate_dataloader` ({num_batches} batches per '
                f'rank): calibrating on {num_batches} batches')
            self.calibrate_steps = num_batches
        return dataloader

    def run(self) -> dict:
        """Calibrate (unless ``only_val``), save ``model_ptq.pth``, test.

        Returns:
            dict: The test metrics of the quantized model.
        """
        if self.only_val:
            self._prepare_only_val()
        else:
            self.calibrate()
            self._save_ptq_checkpoint()
        compile_steps(self.runner, 'test_step')
        return super().run()

    def calibrate(self) -> None:
        """Run the calibration batches (see the class docstring)."""
        logger = self.runner.logger
        with reuse_freed_memory():
            self._run_passes('before_calibration')
            logger.info(
                f'PTQ: calibrating on {self.calibrate_steps} batches')
            compile_steps(self.runner, 'calibrate_step')
            start = time.time()
            calibrate(self.runner.model, self.calibrate_dataloader,
                      self.calibrate_steps)
            logger.info(
                f'PTQ: calibration took {time.time() - start:.1f} s')
            self._run_passes('after_calibration')

    def _run_passes(self, stage: str) -> None:
        """Run the ``ptq_passes`` of ``stage`` on the calibration inputs."""
        if not self.ptq_passes:
            return
        from mmrazor_quant.ptq import collect_inputs, run_ptq_passes
        run_ptq_passes(
            self.runner.model, self.ptq_passes, stage,
            lambda: collect_inputs(self.runner.model,
                                   self.calibrate_dataloader,
                                   self.calibrate_steps))

    def _prepare_only_val(self) -> None:
        model = self.runner.model
        disable_observer(model)
        enable_fake_quant(model)
        try:
            check_calibrated(model)
        except RuntimeError as e:
            raise RuntimeError(
                'PTQLoop(only_val=True) evaluates a calibrated checkpoint: '
                'give it with `load_from` (tools/ptq.py --checkpoint), or set '
                f'only_val=False to calibrate. {e}') from e

    @master_only
    def _save_ptq_checkpoint(self) -> None:
        path = osp.join(self.runner.work_dir, PTQ_CHECKPOINT)
        meta = dict(
            mmengine_version=mmengine.__version__,
            time=time.strftime('%Y%m%d_%H%M%S', time.localtime()),
            seed=self.runner.seed,
            experiment_name=self.runner.experiment_name,
            cfg=self.runner.cfg.pretty_text,
            **quant_state_meta())
        if hasattr(self.dataloader.dataset, 'metainfo'):
            meta['dataset_meta'] = self.dataloader.dataset.metainfo
        checkpoint = dict(
            meta=meta,
            state_dict=weights_to_cpu(get_state_dict(self.runner.model)))
        save_checkpoint(checkpoint, path)
        self.runner.logger.info(f'PTQ: calibrated model saved to {path}')


def _overridden_default_cfg(runner, overrides: dict) -> dict:
    """The default calibration loader with ``overrides`` on top.

    MMRazor's configs write ``val_dataloader = dict(batch_size=32)`` and
    ``calibrate_dataloader=val_dataloader``: a config file binds the name to
    that partial dict, not to the merged loader, so it holds no dataset.
    Its settings are kept; the data stays the training split (principle 5
    of docs/architecture.md).
    """
    loader = default_calibrate_cfg(runner.cfg)
    loader.update(overrides)
    runner.logger.info(
        f'PTQ: calibrate_dataloader {dict(overrides)} names no dataset; '
        'calibrating on train_dataloader\'s dataset (test pipeline) with '
        'these settings')
    return loader


class _QATSwitchesMixin:
    """Derives the quantizer state from a 0-based step (epoch or iter).

    Subclasses call :meth:`_init_switches` with ``freeze_bn_begin`` and
    ``disable_observer_begin`` (1-based; < 1 never), then
    :meth:`_apply_switches`.
    """

    freeze_bn_begin: int
    disable_observer_begin: int

    def _init_switches(self, freeze_bn_begin: int,
                       disable_observer_begin: int) -> None:
        self.freeze_bn_begin = check_begin(freeze_bn_begin, 'freeze_bn_begin')
        # The Runner's checkpoints carry the package and format versions.
        add_quant_state_meta_hook(self.runner)
        self.disable_observer_begin = check_begin(disable_observer_begin,
                                                  'disable_observer_begin')

    def _observers_on(self, step: int) -> bool:
        return not reached(self.disable_observer_begin, step)

    def _switches(self, step: int) -> Tuple[bool, bool]:
        return self._observers_on(step), reached(self.freeze_bn_begin, step)

    def _apply_switches(self, step: int) -> None:
        set_quant_state(self.runner.model, *self._switches(step))


@LOOPS.register_module()
class QATEpochBasedLoop(_QATSwitchesMixin, EpochBasedTrainLoop):
    """Epoch-based quantization-aware training.

    At the start of every epoch fake quants are switched on; observers are
    on before ``disable_observer_begin`` and off from it; BN statistics of
    the BN-fused QAT modules are updated before ``freeze_bn_begin`` and
    frozen from it (:func:`freeze_bn_stats`). Epochs count from 1, like
    ``val_begin``: ``disable_observer_begin=3`` keeps observers on for
    epochs 1 and 2. Since the state is recomputed from the epoch number, a
    resumed run is in the same state as an uninterrupted one.

    Args:
        runner (Runner): The runner.
        dataloader (DataLoader | dict): The training data.
        max_epochs (int): Total epochs.
        val_begin (int): The epoch validation begins at. Defaults to 1.
        val_interval (int): Validation interval. Defaults to 1.
        freeze_bn_begin (int): First epoch with frozen BN statistics; -1
            (or any value < 1) never. Defaults to -1.
        disable_observer_begin (int): First epoch without observers; -1
            (or any value < 1) never. Defaults to -1.
        dynamic_intervals (list[tuple[int, int]], optional): Milestones
            and validation intervals, as in ``EpochBasedTrainLoop``.
            Defaults to None.

    Raises:
        TypeError: If ``freeze_bn_begin`` or ``disable_observer_begin`` is
            not an int.
    """

    def __init__(self,
                 runner,
                 dataloader: Union[DataLoader, Dict],
                 max_epochs: int,
                 val_begin: int = 1,
                 val_interval: int = 1,
                 freeze_bn_begin: int = -1,
                 disable_observer_begin: int = -1,
                 dynamic_intervals: Optional[List[Tuple[int, int]]] = None
                 ) -> None:
        super().__init__(runner, dataloader, max_epochs, val_begin,
                         val_interval, dynamic_intervals)
        self._init_switches(freeze_bn_begin, disable_observer_begin)
        # mmengine compiles train_step lazily: fail before training starts.
        check_compile_cfg(runner.cfg.get('compile'))

    def run_epoch(self) -> None:
        """Set the quantizer state for this epoch, then train it."""
        self._apply_switches(self._epoch)
        super().run_epoch()


@LOOPS.register_module()
class LSQEpochBasedLoop(QATEpochBasedLoop):
    """Epoch-based LSQ / LSQ+ training.

    Observers run only during the very first training iteration: with
    ``LearnableFakeQuantize`` that batch sets each scale (and zero-point)
    to the observer's static estimate (all-reduced across ranks by the
    observers), and the same iteration already trains with it. From the
    second iteration on, observers are off and the scales are learned. A
    resumed run (``iter > 0``) keeps the scales of its checkpoint and never
    switches observers on. Fake quants are on and BN statistics follow
    ``freeze_bn_begin`` as in :class:`QATEpochBasedLoop`.

    Args:
        runner (Runner): The runner.
        dataloader (DataLoader | dict): The training data.
        max_epochs (int): Total epochs.
        val_begin (int): The epoch validation begins at. Defaults to 1.
        val_interval (int): Validation interval. Defaults to 1.
        freeze_bn_begin (int): First epoch (1-based) with frozen BN
            statistics; -1 never. Defaults to -1.
        dynamic_intervals (list[tuple[int, int]], optional): As in
            ``EpochBasedTrainLoop``. Defaults to None.
    """

    def __init__(self,
                 runner,
                 dataloader: Union[DataLoader, Dict],
                 max_epochs: int,
                 val_begin: int = 1,
                 val_interval: int = 1,
                 freeze_bn_begin: int = -1,
                 dynamic_intervals: Optional[List[Tuple[int, int]]] = None
                 ) -> None:
        super().__init__(runner, dataloader, max_epochs, val_begin,
                         val_interval, freeze_bn_begin, -1,
                         dynamic_intervals)

    def _observers_on(self, step: int) -> bool:
        # Only a run that has not trained a single iteration initialises.
        return self._iter == 0

    def run_iter(self, idx, data_batch: Sequence[dict]) -> None:
        """Train one batch; after the first one, observers go off."""
        first = self._iter == 0
        super().run_iter(idx, data_batch)
        if first:
            disable_observer(self.runner.model)
            self.runner.logger.info(
                'LSQ: scales initialised from the first batch; observers '
                'are off from now on')


@LOOPS.register_module()
class QATIterBasedLoop(_QATSwitchesMixin, IterBasedTrainLoop):
    """Iteration-based quantization-aware training, for datasets where an
    epoch is too long to be the unit of the switches.

    Before every iteration the state of :class:`QATEpochBasedLoop` is set
    from the iteration number instead (1-based: ``disable_observer_begin=
    1000`` keeps observers on for iterations 1..999); it is applied only
    when it changes.

    Args:
        runner (Runner): The runner.
        dataloader (DataLoader | dict): The training data.
        max_iters (int): Total iterations.
        val_begin (int): The iteration validation begins at. Defaults to 1.
        val_interval (int): Validation interval. Defaults to 1000.
        freeze_bn_begin (int): First iteration with frozen BN statistics;
            -1 never. Defaults to -1.
        disable_observer_begin (int): First iteration without observers;
            -1 never. Defaults to -1.
        dynamic_intervals (list[tuple[int, int]], optional): As in
            ``IterBasedTrainLoop``. Defaults to None.

    Raises:
        TypeError: If ``freeze_bn_begin`` or ``disable_observer_begin`` is
            not an int.
    """

    def __init__(self,
                 runner,
                 dataloader: Union[DataLoader, Dict],
                 max_iters: int,
                 val_begin: int = 1,
                 val_interval: int = 1000,
                 freeze_bn_begin: int = -1,
                 disable_observer_begin: int = -1,
                 dynamic_intervals: Optional[List[Tuple[int, int]]] = None
                 ) -> None:
        super().__init__(runner, dataloader, max_iters, val_begin,
                         val_interval, dynamic_intervals)
        self._init_switches(freeze_bn_begin, disable_observer_begin)
        check_compile_cfg(runner.cfg.get('compile'))
        self._applied: Optional[Tuple[bool, bool]] = None

    def run(self):
        """Train; the first iteration always applies the state."""
        self._applied = None
        return super().run()

    def run_iter(self, data_batch: Sequence[dict]) -> None:
        """Update the state if this iteration changes it, then train."""
        switches = self._switches(self._iter)
        if switches != self._applied:
            self._apply_switches(self._iter)
            self._applied = switches
        super().run_iter(data_batch)


@LOOPS.register_module()
class QATValLoop(ValLoop):
    """Validate the quantized model and the float model it came from.

    The dataloader is run twice: with fake quants on (metrics prefixed
    ``qat.``) and with every fake quant off (``original.``), e.g.
    ``{'qat.accuracy/top1': 97.9, 'original.accuracy/top1': 98.1}``.
    Observers are off during both passes so validation data never reaches
    the qparams; afterwards every observer and fake-quant flag is back to
    what it was (fake quants on, during QAT).

    Args:
        runner (Runner): The runner.
        dataloader (DataLoader | dict): The validation data.
        evaluator (Evaluator | dict | list): The metrics.
        fp16 (bool): Validate under autocast. Defaults to False.
    """

    def run(self) -> dict:
        """Run both passes and return the prefixed metrics."""
        self.runner.call_hook('before_val')
        self.runner.call_hook('before_val_epoch')
        compile_steps(self.runner, 'val_step')
        model = self.runner.model
        model.eval()
        with preserve_quant_state(model):
            disable_observer(model)
            enable_fake_quant(model)
            metrics = self._evaluate('qat.')
            disable_fake_quant(model)
            metrics.update(self._evaluate('original.'))
        self.runner.call_hook('after_val_epoch', metrics=metrics)
        self.runner.call_hook('after_val')
        return metrics

    def _evaluate(self, prefix: str) -> dict:
        """One pass over the data; metrics and losses named ``prefix*``."""
        self.val_loss.clear()
        for idx, data_batch in enumerate(self.dataloader):
            self.run_iter(idx, data_batch)
        metrics = self.evaluator.evaluate(len(self.dataloader.dataset))
        metrics = {prefix + key: value for key, value in metrics.items()}
        metrics.update(mean_losses(self.val_loss, prefix))
        return metrics
