"""Check that a model quantizes, trains a step and deploys with parity.

The model-zoo check: a model (usually an mmcls config with random weights)
goes through every stage a user runs, each stage recorded with its
figures or the error that stopped it.
"""
import copy
import math
import tempfile
import time
import traceback
from dataclasses import asdict, dataclass, field
from typing import Dict, Optional, Sequence, Union

import onnx
import torch
from mmengine.config import Config
from torch import nn

from mmrazor_quant.backends import all_backends, get_backend
from mmrazor_quant.models.codebases import codebase_of
from mmrazor_quant.models.fake_quants import disable_observer
from mmrazor_quant.models.fake_quants.base import BaseFakeQuantize
from mmrazor_quant.registry import MODELS
from mmrazor_quant.utils.sqnr import sqnr_db

__all__ = ['ModelCheckReport', 'check_model', 'estimate_bn_stats',
           'quantize_w8a8', 'w8a8_model_cfg', 'calibrate_and_freeze',
           'w8a8_backends']
#: The input nudge of the baseline, relative to unit-variance inputs.
NUDGE = 1e-5


@dataclass
class ModelCheckReport:
    """What each stage of :func:`check_model` found.

    Attributes:
        stages (dict): Stage name -> ``'ok'`` or the error that stopped it
            (``quantize``, ``calibrate``, ``predict``, ``export``,
            ``parity``, ``qat_step``).
        num_fake_quants (int): Fake-quant modules in the quantized model.
        num_q (int): ``QuantizeLinear`` nodes in the exported ONNX.
        num_dq (int): ``DequantizeLinear`` nodes in the exported ONNX.
        predict_max_diff (float): ``max |scores - softmax(tensor)|``.
        top1_agreement (float): Runtime vs simulation arg-max agreement.
        sqnr_db (float): Runtime output SQNR against the simulation (dB).
        nudge_sqnr_db (float): Simulation vs simulation on inputs nudged by
            :data:`NUDGE`: how much this (random-weight) net amplifies one
            rounding flip, the floor a runtime can be judged against.
        qat_loss (float): The loss of the QAT step.
        qat_grad_norm (float): Gradient norm of that step (finite if ok).
        seconds (dict): Wall time of each stage.
    """
    stages: Dict[str, str] = field(default_factory=dict)
    seconds: Dict[str, float] = field(default_factory=dict)
    num_fake_quants: int = 0
    num_q: int = 0
    num_dq: int = 0
    predict_max_diff: float = math.nan
    top1_agreement: float = math.nan
    sqnr_db: float = math.nan
    nudge_sqnr_db: float = math.nan
    qat_loss: float = math.nan
    qat_grad_norm: float = math.nan

    @property
    def passed(self) -> bool:
        """Whether every stage that ran is ``'ok'``."""
        return bool(self.stages) and all(
            v == 'ok' for v in self.stages.values())

    def to_dict(self) -> dict:
        return asdict(self)


def estimate_bn_stats(model: nn.Module, batches: Sequence[torch.Tensor]
                      ) -> None:
    """Set BN running statistics to the exact mean/var over ``batches``.

    Random-weight nets with default running stats (0, 1) blow activations
    up layer after layer; estimated statistics keep them normalised, as
    trained ones would.
    """
    bns = [m for m in model.modules()
           if isinstance(m, nn.modules.batchnorm._BatchNorm)]
    momenta = [bn.momentum for bn in bns]
    for bn in bns:
        bn.reset_running_stats()
        bn.momentum = None  # cumulative average
    model.train()
    with torch.no_grad():
        for batch in batches:
            model(batch, mode='tensor')
    for bn, momentum in zip(bns, momenta):
        bn.momentum = momentum
    model.eval()


def build_architecture(cfg: Union[str, Config, dict, nn.Module],
                       model_overrides: Optional[dict] = None) -> nn.Module:
    """The float model of ``cfg`` (a ``scope::`` path such as ``mmcls::``
    or ``mmpretrain::``, a config file, a config or a model), with
    ``model_overrides`` merged into ``model``; built in the config's
    ``default_scope``."""
    if isinstance(cfg, nn.Module):
        return cfg
    if isinstance(cfg, str):
        if '::' in cfg:
            from mmengine.hub import get_config
            cfg = get_config(cfg)
        else:
            cfg = Config.fromfile(cfg)
    cfg = Config(dict(cfg)) if not isinstance(cfg, Config) else cfg
    if model_overrides:
        cfg.merge_from_dict(dict(model=model_overrides))
    from mmengine.registry import init_default_scope
    init_default_scope(cfg.get('default_scope', 'mmcls'))
    return MODELS.build(cfg.model)


def w8a8_model_cfg(architecture: Union[dict, nn.Module],
                   backend: str,
                   forward_modes: Sequence[str] = ('tensor', 'predict',
                                                   'loss'),
                   weight_bits: int = 8,
                   **quantizer_kwargs) -> dict:
    """The ``MMArchitectureQuant`` config of ``architecture`` in MMRazor's
    schema, with the backend's quantizer and MMRazor's W8A8 scheme on it
    (the backend's ``w8a8``; weights per channel); no ``input_shape``, as
    MMRazor's configs.

    Args:
        architecture (dict | nn.Module): The float model or its config.
        backend (str): One of :func:`w8a8_backends`.
        forward_modes (Sequence[str]): Modes to trace. Defaults to all
            three.
        weight_bits (int): Weight grid; 7 for CPUs whose int8 kernels
            saturate (:func:`~mmrazor_quant.deploy.int8_pairs_saturate`).
            Defaults to 8.
        **quantizer_kwargs: Further quantizer arguments (e.g.
            ``model_type='transformer'`` for OpenVINO).
    """
    plugin = get_backend(backend)
    if plugin.quantizer is None or plugin.w8a8 is None:
        raise ValueError(f'backend {backend!r} declares no quantizer and '
                         f'W8A8 scheme; expected one of {w8a8_backends()}')
    return dict(
        type='mmrazor_quant.MMArchitectureQuant',
        architecture=architecture,
        forward_modes=tuple(forward_modes),
        quantizer=dict(
            **quantizer_kwargs,
            type=f'mmrazor_quant.{plugin.quantizer}',
            global_qconfig=dict(
                w_observer=dict(
                    type='mmrazor_quant.PerChannelMinMaxObserver'),
                a_observer=dict(type='mmrazor_quant.MinMaxObserver'),
                w_fake_quant=dict(type='mmrazor_quant.FakeQuantize'),
                a_fake_quant=dict(type='mmrazor_quant.FakeQuantize'),
                w_qscheme=dict(plugin.w8a8['w_qscheme'], bit=weight_bits),
                a_qscheme=dict(plugin.w8a8['a_qscheme']))))


def quantize_w8a8(architecture: nn.Module,
                  backend: str,
                  input_shape: Optional[Sequence[int]],
                  forward_modes: Sequence[str] = ('tensor', 'predict',
                                                  'loss'),
                  weight_bits: int = 8,
                  **quantizer_kwargs) -> nn.Module:
    """``architecture`` wrapped in ``MMArchitectureQuant`` as
    :func:`w8a8_model_cfg` describes it, and built.

    Args:
        input_shape (Sequence[int], optional): One sample's shape, for the
            tracer; None lets the codebase adapter derive it when the
            model needs one.
        Others: as :func:`w8a8_model_cfg`.
    """
    cfg = w8a8_model_cfg(architecture, backend, forward_modes, weight_bits,
                         **quantizer_kwargs)
    if input_shape is not None:
        cfg['input_shape'] = tuple(input_shape)
    return MODELS.build(cfg)


def w8a8_backends() -> list:
    """The registered deploy targets with a quantizer and a W8A8 scheme,
    sorted."""
    return sorted(name for name, b in all_backends().items()
                  if b.deployable and b.quantizer and b.w8a8)


def _stage(report: ModelCheckReport, name: str, fn, *args):
    """Run one stage; record 'ok' or its error; None if it failed."""
    start = time.perf_counter()
    try:
        out = fn(*args)
    except Exception as e:  # noqa: BLE001 - the report is the result
        last = traceback.extract_tb(e.__traceback__)[-1]
        report.stages[name] = (f'{type(e).__name__}: {str(e)[:300]} '
                               f'({last.filename}:{last.lineno})')
        return None
    finally:
        report.seconds[name] = round(time.perf_counter() - start, 2)
    report.stages[name] = 'ok'
    return out


def _predict_diff(qmodel: nn.Module, x: torch.Tensor) -> float:
    with torch.no_grad():
        logits = qmodel(x, mode='tensor')
        samples = qmodel(x, mode='predict')
    scores = codebase_of(qmodel.architecture).pred_scores(samples)
    return float((scores - logits.softmax(-1)).abs().max())


def _qat_step(qmodel: nn.Module, x: torch.Tensor) -> tuple:
    qmodel = copy.deepcopy(qmodel).eval()
    with torch.no_grad():
        outputs = qmodel(x, mode='tensor')
    qmodel.train()
    samples = codebase_of(qmodel.architecture).dummy_data_samples(
        x, outputs)
    losses = qmodel(x, samples, mode='loss')
    loss = sum(v for k, v in losses.items() if 'loss' in k)
    loss.backward()
    grads = [p.grad.norm() for p in qmodel.parameters() if p.grad is not None]
    norm = float(torch.stack(grads).norm()) if grads else math.nan
    if not grads or not math.isfinite(norm):
        raise RuntimeError(f'QAT step gave no finite gradient (norm {norm})')
    return float(loss), norm


def _export_and_compare(qmodel: nn.Module, backend: str, x: torch.Tensor,
                        report: ModelCheckReport, workdir: str) -> None:
    from mmrazor_quant.deploy import check_parity, export_model
    result = export_model(qmodel, x[:2], f'{workdir}/model.onnx', backend)
    ops = [n.op_type for n in onnx.load(result.onnx_path).graph.node]
    report.num_q = ops.count('QuantizeLinear')
    report.num_dq = ops.count('DequantizeLinear')
    report.stages['export'] = 'ok'
    parity = check_parity(result.deploy_model, result.onnx_path, x,
                          runtime='onnxruntime', batch_size=len(x))
    report.top1_agreement = parity.agreement
    report.sqnr_db = parity.sqnr_db
    with torch.no_grad():
        sim = qmodel(x, mode='tensor').numpy()
        nudged = qmodel(x + NUDGE * torch.randn_like(x), mode='tensor')
    report.nudge_sqnr_db = sqnr_db(sim, nudged.numpy())


def check_model(cfg: Union[str, Config, dict, nn.Module],
                backend: str = 'openvino',
                input_size: Union[int, Sequence[int]] = 64,
                model_overrides: Optional[dict] = None,
                num_samples: int = 16,
                calib_batches: int = 2,
                seed: int = 0,
                weight_bits: int = 8) -> ModelCheckReport:
    """Quantize ``cfg``'s model with random weights and check every stage.

    Stages: ``quantize`` (trace the tensor/predict/loss modes with the
    backend's W8A8 scheme), ``calibrate`` (BN statistics estimated first,
    then min/max observers, then observers disabled), ``predict``
    (``pred_score == softmax(tensor)``), ``export`` (standard QDQ ONNX;
    Q count == DQ count), ``parity`` (onnxruntime against the simulation,
    plus the nudge baseline) and ``qat_step`` (one loss + backward, on a
    copy so the parity figures stay those of the calibrated model).

    A config whose ``model`` is an ``MMArchitectureQuant`` (MMRazor's
    schema, e.g. :func:`w8a8_model_cfg` around the architecture) is built
    as it is, its architecture first (for the BN statistics); any other
    config or model is quantized with :func:`quantize_w8a8` at
    ``input_size``.

    Args:
        cfg (str | Config | dict | nn.Module): An ``mmcls::`` config path,
            a config file or object, or a built classifier.
        backend (str): One of :func:`w8a8_backends`. Defaults to
            ``'openvino'``.
        input_size (int | Sequence[int]): Image size (``H`` or
            ``(H, W)``). Defaults to 64.
        model_overrides (dict, optional): Merged into ``cfg.model``.
            Defaults to None.
        num_samples (int): Random images compared in parity. Defaults to
            16.
        calib_batches (int): Calibration batches of ``num_samples``.
            Defaults to 2.
        seed (int): Seed of weights and inputs. Defaults to 0.
        weight_bits (int): Weight grid (see :func:`quantize_w8a8`).
            Defaults to 8.

    Returns:
        ModelCheckReport: The figures and the status of each stage.

    Raises:
        ValueError: If ``backend`` is unknown.
    """
    if backend not in w8a8_backends():
        raise ValueError(f'backend must be one of {w8a8_backends()}, '
                         f'got {backend!r}')
    h, w = (input_size, input_size) if isinstance(input_size, int) \
        else tuple(input_size)
    torch.manual_seed(seed)
    report = ModelCheckReport()
    quantized_cfg = _quantized_model_cfg(cfg)
    if quantized_cfg is not None:
        cfg = Config(dict(cfg, model=quantized_cfg['architecture']))
    architecture = build_architecture(cfg, model_overrides)
    batches = [torch.randn(num_samples, 3, h, w)
               for _ in range(calib_batches + 1)]
    estimate_bn_stats(architecture, batches[:-1])
    if quantized_cfg is not None:
        qmodel = _stage(report, 'quantize', MODELS.build,
                        dict(quantized_cfg, architecture=architecture))
    else:
        qmodel = _stage(report, 'quantize', quantize_w8a8, architecture,
                        backend, (3, h, w), ('tensor', 'predict', 'loss'),
                        weight_bits)
    if qmodel is None:
        return report
    report.num_fake_quants = sum(
        isinstance(m, BaseFakeQuantize) for m in qmodel.modules())
    if _stage(report, 'calibrate', calibrate_and_freeze, qmodel,
              batches[:-1]) is None:
        return report
    x = batches[-1]
    diff = _stage(report, 'predict', _predict_diff, qmodel, x)
    report.predict_max_diff = math.nan if diff is None else diff
    with tempfile.TemporaryDirectory() as workdir:
        _stage(report, 'parity', _export_and_compare, qmodel, backend, x,
               report, workdir)
    report.stages.setdefault('export', report.stages['parity'])
    qat = _stage(report, 'qat_step', _qat_step, qmodel, x)
    if qat is not None:
        report.qat_loss, report.qat_grad_norm = qat
    return report


def _quantized_model_cfg(cfg) -> Optional[dict]:
    """``cfg.model`` if it is an MMArchitectureQuant config, else None."""
    if not isinstance(cfg, (dict, Config)):
        return None
    model = cfg.get('model')
    if isinstance(model, dict) and 'architecture' in model and \
            'quantizer' in model:
        return dict(model)
    return None


def calibrate_and_freeze(qmodel: nn.Module,
                         batches: Sequence[torch.Tensor]) -> nn.Module:
    """Run ``batches`` through the tensor mode in eval mode, then disable
    the observers (qparams fixed). Returns ``qmodel``."""
    qmodel.eval()
    with torch.no_grad():
        for batch in batches:
            qmodel(batch, mode='tensor')
    disable_observer(qmodel)
    return qmodel
