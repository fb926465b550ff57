"""The codebases' model zoos: a config as shipped, quantized and deployed.

:func:`check_zoo_config` takes one config file of an OpenMMLab codebase as
the codebase ships it (``mmseg::``, ``mmpose::``, ``mmyolo::``,
``mmdet::``), makes only the edits a user without a GPU cluster or
checkpoints makes (:func:`zoo_config`: SyncBN -> BN, pretrained weights
removed) and runs every stage a user runs, each recorded with its figures
or the error that stopped it: trace every mode of the model with MMRazor's
W8A8 scheme for the backend (the codebase adapter's rewrites, no
hand-written skips), calibrate, predict on the adapter's data samples, one
training step, export, and parity of each runtime against the simulation
through the task's deploy head.
"""
import copy
import math
import tempfile
import time
import traceback
from dataclasses import asdict, dataclass, field
from typing import Any, Dict, Optional, Sequence, Tuple, Union

import torch
from mmengine.config import Config
from torch import nn

from mmrazor_quant.models.codebases import codebase_of
from mmrazor_quant.models.fake_quants import disable_observer, enable_observer
from mmrazor_quant.models.fake_quants.base import BaseFakeQuantize
from mmrazor_quant.registry import MODELS
from mmrazor_quant.utils.batch_norms import trained_like_batch_norms
from .model_check import w8a8_model_cfg

__all__ = ['ZooCheckReport', 'zoo_config', 'check_zoo_config']

#: Below this SQNR in a runtime, the report also measures the simulation's
#: float32 floor (``ZooCheckReport.float64_floor_db``).
FLOOR_CHECK_DB = 30.
#: Stages in the order :func:`check_zoo_config` runs them.
STAGES = ('build', 'quantize', 'calibrate', 'predict', 'qat_step', 'export',
          'parity')


@dataclass
class ZooCheckReport:
    """What each stage of :func:`check_zoo_config` found.

    Attributes:
        config (str): The config checked.
        stages (dict): Stage -> ``'ok'`` or the error that stopped it.
        seconds (dict): Wall time of each stage.
        num_fake_quants (int): Fake-quant modules of the quantized model.
        num_q (int): ``QuantizeLinear`` nodes of the exported ONNX.
        num_dq (int): ``DequantizeLinear`` nodes of the exported ONNX.
        sqnr_db (dict): Runtime -> the lowest SQNR of its outputs against
            the simulation's (dB).
        agreement (dict): Runtime -> the task's agreement (pixels labelled
            alike, keypoints within half a pixel, boxes reproduced; top-1
            for classifiers), as a fraction.
        parity (dict): Runtime -> the deploy head's one-line report.
        qat_loss (float): The loss of the training step.
        qat_grad_norm (float): The gradient norm of that step.
        float64_floor_db (float): Where a runtime is below
            ``FLOOR_CHECK_DB``: the lowest SQNR of the simulation in float32
            against itself in float64, how far float32 arithmetic alone
            (any summation order) determines the outputs; NaN otherwise.
    """
    config: str = ''
    stages: Dict[str, str] = field(default_factory=dict)
    seconds: Dict[str, float] = field(default_factory=dict)
    num_fake_quants: int = 0
    num_q: int = 0
    num_dq: int = 0
    sqnr_db: Dict[str, float] = field(default_factory=dict)
    agreement: Dict[str, float] = field(default_factory=dict)
    parity: Dict[str, str] = field(default_factory=dict)
    qat_loss: float = math.nan
    qat_grad_norm: float = math.nan
    float64_floor_db: float = math.nan

    @property
    def passed(self) -> bool:
        """Whether every stage ran and is ``'ok'``."""
        return all(self.stages.get(s) == 'ok' for s in STAGES)

    @property
    def failed_stage(self) -> Optional[str]:
        """The first stage that is not ``'ok'`` (None if all are)."""
        for stage in STAGES:
            if self.stages.get(stage) != 'ok':
                return stage
        return None

    def to_dict(self) -> dict:
        return asdict(self)


# -- the config ----------------------------------------------------------
def _edited(node: Any) -> Any:
    """``node`` with SyncBN as BN and pretrained weights removed."""
    if isinstance(node, dict):
        out = {}
        for key, value in node.items():
            if key == 'init_cfg' and _is_pretrained(value):
                continue
            if key == 'pretrained' and isinstance(value, str):
                out[key] = None
                continue
            if key == 'type' and value in ('SyncBN', 'MMSyncBN'):
                value = 'BN'
            out[key] = _edited(value)
        return type(node)(out) if not isinstance(node, Config) else out
    if isinstance(node, (list, tuple)):
        return type(node)(_edited(v) for v in node)
    return node


def _is_pretrained(init_cfg: Any) -> bool:
    if isinstance(init_cfg, dict):
        return init_cfg.get('type') == 'Pretrained'
    if isinstance(init_cfg, (list, tuple)):
        return any(_is_pretrained(c) for c in init_cfg)
    return False


def zoo_config(config: str) -> Config:
    """The config ``config`` (``scope::path`` as the codebase ships it, or a
    file) with the only edits the zoo makes: ``SyncBN`` -> ``BN`` (one
    process, no GPU) and pretrained weights (``init_cfg`` of type
    ``Pretrained``, ``pretrained=``) removed."""
    if '::' in config:
        from mmengine.hub import get_config
        cfg = get_config(config)
    else:
        cfg = Config.fromfile(config)
    cfg.model = _edited(cfg.model.to_dict() if hasattr(cfg.model, 'to_dict')
                        else dict(cfg.model))
    return cfg


def _build_architecture(cfg: Config, seed: int) -> nn.Module:
    """The float model of ``cfg`` with random weights and BN statistics
    drawn as training leaves them."""
    from mmengine.registry import init_default_scope
    init_default_scope(cfg.get('default_scope', 'mmengine'))
    torch.manual_seed(seed)
    model = MODELS.build(cfg.model)
    if hasattr(model, 'init_weights'):
        model.init_weights()
    trained_like_batch_norms(model, seed + 1)
    return model.eval()


# -- the stages ----------------------------------------------------------
def _stage(report: ZooCheckReport, name: str, fn, *args):
    """Run one stage; record 'ok' or its error; None if it failed."""
    start = time.perf_counter()
    try:
        out = fn(*args)
    except Exception as e:  # noqa: BLE001 - the report is the result
        last = traceback.extract_tb(e.__traceback__)[-1]
        report.stages[name] = (f'{type(e).__name__}: {str(e)[:400]} '
                               f'({last.filename}:{last.lineno})')
        return None
    finally:
        report.seconds[name] = round(time.perf_counter() - start, 2)
    report.stages[name] = 'ok'
    return out


def _calibrate(qmodel: nn.Module, batches: Sequence[torch.Tensor]):
    qmodel.eval()
    with torch.no_grad():
        for batch in batches:
            qmodel(batch, mode='tensor')
    disable_observer(qmodel)
    with torch.no_grad():
        return qmodel(batches[-1], mode='tensor')


def _samples(qmodel: nn.Module, x: torch.Tensor, outputs, cfg: Config):
    adapter = codebase_of(qmodel.architecture)
    samples = adapter.dummy_data_samples(x, outputs)
    meta = adapter.dataset_metainfo(cfg)
    if meta:
        for sample in samples:
            sample.set_metainfo(meta)
    return samples


def _predict(qmodel: nn.Module, x: torch.Tensor, samples):
    with torch.no_grad():
        preds = qmodel(x, copy.deepcopy(samples), mode='predict')
    if len(preds) != len(x):
        raise RuntimeError(f'predict gave {len(preds)} samples for '
                           f'{len(x)} inputs')
    return preds


def _qat_step(qmodel: nn.Module, x: torch.Tensor, samples) -> Tuple:
    qmodel = copy.deepcopy(qmodel).train()
    _first_epoch_info()
    # as a QAT loop starts: observers on, so the fake quants of branches
    # only the loss runs (auxiliary heads) take their ranges from the batch
    enable_observer(qmodel)
    try:
        losses = qmodel(x, copy.deepcopy(samples), mode='loss')
    except (KeyError, AttributeError) as e:
        key, head = _head_of(qmodel.architecture)
        raise ValueError(
            f'{key} ({type(head).__name__}): its loss reads {e} from the '
            'data samples, which the '
            f'{codebase_of(qmodel.architecture).name} dummy samples do not '
            'carry; give the loss mode real data samples') from e
    loss = sum(_total(v) for k, v in losses.items() if 'loss' in k)
    loss.backward()
    loss = float(loss.detach())
    grads = [p.grad.norm() for p in qmodel.parameters() if p.grad is not None]
    norm = float(torch.stack(grads).norm()) if grads else math.nan
    if not grads or not math.isfinite(norm) or not math.isfinite(loss):
        raise RuntimeError(f'the training step gave loss {loss} and '
                           f'gradient norm {norm}')
    return loss, norm


def _first_epoch_info() -> None:
    """The message hub's ``epoch`` and ``iter`` as a Runner's
    ``RuntimeInfoHook`` sets them when training starts, where nothing set
    them (YOLOv6's and PPYOLOE's heads pick their assigner by epoch)."""
    from mmengine.logging import MessageHub
    hub = MessageHub.get_current_instance()
    for key in ('epoch', 'iter'):
        if hub.get_info(key) is None:
            hub.update_info(key, 0)


def _head_of(model: nn.Module) -> Tuple[str, Any]:
    """``('model.<key>', head)`` of the model's loss-computing head."""
    for key in ('head', 'decode_head', 'bbox_head', 'roi_head'):
        if getattr(model, key, None) is not None:
            return f'model.{key}', getattr(model, key)
    return 'model', model


def _total(value) -> torch.Tensor:
    if isinstance(value, (list, tuple)):
        return sum(_total(v) for v in value)
    return value


def _export(qmodel: nn.Module, backend: str, x: torch.Tensor,
            report: ZooCheckReport, workdir: str):
    import onnx

    from mmrazor_quant.deploy import export_model
    result = export_model(qmodel, x[:1], f'{workdir}/model.onnx', backend)
    ops = [n.op_type for n in onnx.load(result.onnx_path).graph.node]
    report.num_q = ops.count('QuantizeLinear')
    report.num_dq = ops.count('DequantizeLinear')
    return result


def _parity(qmodel: nn.Module, result, x: torch.Tensor, samples,
            runtimes: Sequence[str], report: ZooCheckReport) -> None:
    from mmrazor_quant.deploy import deploy_head_of
    head = deploy_head_of(qmodel)
    for runtime in runtimes:
        parity = head.check_parity(qmodel, result.deploy_model,
                                   result.onnx_path, x, samples, runtime)
        report.parity[runtime] = parity.format()
        report.sqnr_db[runtime] = float(parity.sqnr_db)
        report.agreement[runtime] = float(parity.agreement)
    low = [r for r in runtimes if report.sqnr_db[r] < FLOOR_CHECK_DB]
    if low:
        try:
            report.float64_floor_db = _float64_floor(result.deploy_model, x)
        except Exception as e:  # noqa: BLE001 - a diagnosis, not a stage
            report.parity['float64_floor'] = f'not measured: {e}'[:200]


def _float64_floor(deploy_model: nn.Module, x: torch.Tensor) -> float:
    """The lowest SQNR of ``deploy_model``'s outputs in float32 against
    the same model in float64 on ``x``."""
    from mmrazor_quant.deploy.parity import flat_outputs
    from mmrazor_quant.utils.sqnr import sqnr_db
    model64 = copy.deepcopy(deploy_model).double().eval()
    with torch.no_grad():
        outs32 = flat_outputs(deploy_model.eval()(x))
        outs64 = flat_outputs(model64(x.double()))
    return min(float(sqnr_db(ref.float(), out))
               for ref, out in zip(outs64, outs32))


def check_zoo_config(config: Union[str, Config],
                     input_hw: Tuple[int, int],
                     backend: str = 'openvino',
                     runtimes: Optional[Sequence[str]] = None,
                     num_samples: int = 2,
                     calib_batches: int = 2,
                     weight_bits: int = 8,
                     seed: int = 0) -> ZooCheckReport:
    """Quantize, train a step, export and check one config of a codebase.

    Args:
        config (str | Config): ``scope::path`` of a config the codebase
            ships, a config file, or a config already edited by
            :func:`zoo_config`.
        input_hw (tuple): ``(H, W)`` to trace, calibrate and compare at.
        backend (str): The deploy target whose W8A8 scheme quantizes the
            model. Defaults to ``'openvino'``.
        runtimes (Sequence[str], optional): Runtimes whose outputs are
            compared with the simulation. Defaults to those of the backend
            (:func:`~mmrazor_quant.deploy.runtimes.parity_runtimes`: for
            OpenVINO, OpenVINO and onnxruntime).
        num_samples (int): Images per batch (calibration, predict, the
            training step and parity). Defaults to 2.
        calib_batches (int): Calibration batches. Defaults to 2.
        weight_bits (int): Weight grid (7 where the CPU's int8 kernels
            saturate). Defaults to 8.
        seed (int): Seed of weights, BN statistics and inputs.

    Returns:
        ZooCheckReport: The figures and the status of each stage.
    """
    report = ZooCheckReport(config=config if isinstance(config, str)
                            else config.filename or '')
    cfg = _stage(report, 'build', lambda: config if isinstance(
        config, Config) else zoo_config(config))
    if cfg is None:
        return report
    architecture = _stage(report, 'build', _build_architecture, cfg, seed)
    if architecture is None:
        return report
    h, w = input_hw
    model_cfg = w8a8_model_cfg(architecture, backend,
                               weight_bits=weight_bits)
    model_cfg['input_shape'] = (3, h, w)
    qmodel = _stage(report, 'quantize', MODELS.build, model_cfg)
    if qmodel is None:
        return report
    report.num_fake_quants = sum(
        isinstance(m, BaseFakeQuantize) for m in qmodel.modules())
    gen = torch.Generator().manual_seed(seed)
    batches = [torch.randn(num_samples, 3, h, w, generator=gen)
               for _ in range(calib_batches + 1)]
    outputs = _stage(report, 'calibrate', _calibrate, qmodel, batches)
    if outputs is None:
        return report
    x = batches[-1]
    samples = _stage(report, 'predict', _samples, qmodel, x, outputs, cfg)
    if samples is not None:
        _stage(report, 'predict', _predict, qmodel, x, samples)
        qat = _stage(report, 'qat_step', _qat_step, qmodel, x, samples)
        if qat is not None:
            report.qat_loss, report.qat_grad_norm = qat
    with tempfile.TemporaryDirectory() as workdir:
        result = _stage(report, 'export', _export, qmodel, backend, x,
                        report, workdir)
        if result is not None:
            if runtimes is None:
                from mmrazor_quant.backends import get_backend
                from mmrazor_quant.deploy.runtimes import parity_runtimes
                runtimes = parity_runtimes(get_backend(backend))
            _stage(report, 'parity', _parity, qmodel, result, x,
                   samples or [], runtimes, report)
    return report
