"""Export a config's quantized model the way its ``deploy_cfg`` describes,
with command-line overrides, and check it against the simulation: what
``tools/export.py`` and ``tools/ptq.py --export`` run."""
import os
import os.path as osp
from dataclasses import dataclass, fields, replace
from typing import Any, Dict, List, Optional, Tuple

import torch
import torch.nn.functional as F
from mmengine.config import Config
from torch import nn

from mmrazor_quant.backends import backend_names, get_backend
from mmrazor_quant.structures import DeployConfig

__all__ = [
    'ExportSettings', 'resolve_output_path', 'export_and_check',
    'check_exportable', 'export_runner_model', 'deploy_config_of'
]


@dataclass(frozen=True)
class ExportSettings:
    """What to export: the ``deploy_cfg``'s values, overridden field by
    field by the command line.

    Attributes:
        backend (str): A registered backend with an exporter (see
            :mod:`mmrazor_quant.backends`).
        opset (int, optional): None picks 17, or 21 for 4-bit grids.
        input_names, output_names (list[str], optional): Graph names.
        dynamic_axes (dict, optional): None gives a dynamic batch only.
        input_hw (tuple, optional): ``(height, width)`` to resize the
            example and parity inputs to; None keeps the data's size.
        implicit (bool): TensorRT implicit mode (float ONNX + ranges).
        save_file (str, optional): The ONNX file name.
        exporter_options (dict, optional): Further arguments of the
            backend's exporter (e.g. onnxruntime's ``float_bias``).
    """
    backend: Optional[str] = None
    opset: Optional[int] = None
    input_names: Optional[List[str]] = None
    output_names: Optional[List[str]] = None
    dynamic_axes: Optional[Dict[str, Dict[int, str]]] = None
    input_hw: Optional[Tuple[int, int]] = None
    implicit: bool = False
    save_file: Optional[str] = None
    exporter_options: Optional[Dict[str, Any]] = None

    @classmethod
    def resolve(cls, deploy_cfg: Optional[DeployConfig],
                **overrides) -> 'ExportSettings':
        """The ``deploy_cfg``'s settings with each non-None override on top.

        Raises:
            ValueError: If no backend is given by either.
        """
        base = cls() if deploy_cfg is None else cls(
            backend=deploy_cfg.backend,
            opset=deploy_cfg.export_opset(),
            input_names=deploy_cfg.input_names,
            output_names=deploy_cfg.output_names,
            dynamic_axes=deploy_cfg.dynamic_axes or None,
            input_hw=deploy_cfg.example_hw(),
            save_file=deploy_cfg.save_file,
            **deploy_cfg.backend_settings)
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(overrides) - known)
        if unknown:
            raise TypeError(f'unknown export settings {unknown}')
        settings = replace(base, **{k: v for k, v in overrides.items()
                                    if v is not None})
        if settings.backend is None:
            raise ValueError('no backend to export for: the config has no '
                             'model.deploy_cfg; pass --backend '
                             + '|'.join(backend_names(deployable=True)))
        get_backend(settings.backend, 'backend', deployable=True)
        return settings

    def exporter_kwargs(self) -> dict:
        """Arguments of the backend's exporter."""
        kwargs = dict(opset=self.opset, input_names=self.input_names,
                      output_names=self.output_names,
                      dynamic_axes=self.dynamic_axes)
        if self.implicit:
            kwargs['implicit'] = True
        kwargs.update(self.exporter_options or {})
        return kwargs


def resolve_output_path(settings: ExportSettings, config: str,
                        checkpoint: Optional[str] = None,
                        out: Optional[str] = None,
                        work_dir: Optional[str] = None) -> str:
    """Where the ``.onnx`` goes, the OpenMMLab way.

    * ``out``: that file; a directory (existing, or ending in ``/``) is
      taken as a work dir;
    * ``work_dir``: ``<work_dir>/<save_file>``, or
      ``<work_dir>/<config name>_<backend>.onnx`` without a ``save_file``;
    * neither: beside the checkpoint, as ``<save_file>`` or
      ``<checkpoint name>_<backend>.onnx``.

    Raises:
        ValueError: If both ``out`` and ``work_dir`` are given, or ``out``
            does not end in ``.onnx``.
    """
    if out is not None and work_dir is not None:
        raise ValueError('give --out FILE or --work-dir DIR, not both')
    if out is not None and (out.endswith(('/', os.sep)) or osp.isdir(out)):
        out, work_dir = None, out
    if out is not None:
        if not out.endswith('.onnx'):
            raise ValueError(f'--out {out!r} must name an .onnx file (or '
                             'be a directory to write into)')
        return out
    stem = osp.splitext(osp.basename(config))[0]
    if work_dir is not None:
        return osp.join(work_dir, settings.save_file or
                        f'{stem}_{settings.backend}.onnx')
    if checkpoint is None:
        raise ValueError('no output path: give --out or --work-dir')
    if settings.save_file:
        return osp.join(osp.dirname(checkpoint), settings.save_file)
    return osp.splitext(checkpoint)[0] + f'_{settings.backend}.onnx'


def _resize(inputs: torch.Tensor,
            hw: Optional[Tuple[int, int]]) -> torch.Tensor:
    if hw is None or tuple(inputs.shape[-2:]) == tuple(hw):
        return inputs
    return F.interpolate(inputs, size=hw, mode='bilinear',
                         align_corners=False)


def export_and_check(model: nn.Module,
                     cfg: Config,
                     settings: ExportSettings,
                     out: str,
                     num_samples: int = 256,
                     verify: bool = True,
                     log=print,
                     runtime: Optional[str] = None):
    """Export ``model`` to ``out`` with ``settings`` and report its parity
    with the simulation on the config's test data.

    Args:
        model (MMArchitectureQuant): Calibrated, in eval mode.
        cfg (Config): Has ``test_dataloader``.
        settings (ExportSettings): What to write.
        out (str): The ``.onnx`` path.
        num_samples (int): Test samples for the parity check. Defaults to
            256.
        verify (bool): Run the parity check in the backend's runtime.
            Defaults to True.
        log (callable): Prints a line. Defaults to :func:`print`.
        runtime (str, optional): The runtime to check in (e.g. OpenVINO
            for a TensorRT export, whose own runtime here is
            onnxruntime). None checks in the backend's declared runtime,
            with its options.

    Returns:
        tuple: The :class:`ExportResult` and the parity report (None when
        not checked).
    """
    from . import build_exporter, deploy_head_of
    from .from_config import preprocessed_batches
    batches = list(preprocessed_batches(model, cfg, num_samples))
    # Detection batches are padded per batch: keep those of the first size.
    size = batches[0][0].shape[-2:]
    batches = [(x, samples) for x, samples in batches if x.shape[-2:] == size]
    inputs = _resize(torch.cat([x for x, _ in batches]), settings.input_hw)
    samples = [s for _, batch_samples in batches for s in batch_samples]
    if settings.input_hw is not None:
        log('export and parity at {}x{} (deploy_cfg input shape)'.format(
            *settings.input_hw))
    backend = get_backend(settings.backend, 'backend', deployable=True)
    exporter = build_exporter(backend.name, **settings.exporter_kwargs())
    # The simulation this export matches (e.g. int32 biases).
    prepared = exporter.prepare_model(model)
    if prepared:
        log(prepared)
    result = exporter.export(model, inputs[:2], out)
    for role, path in result.files.items():
        log(f'wrote {role:8s}: {path}')
    if not verify:
        return result, None
    if settings.implicit:
        log('implicit mode: the float ONNX is not compared (the backend '
            'applies the ranges at build time)')
        return result, None
    if runtime is None and backend.runtime is None:
        log(f'{backend.name} names no runtime: the export is not compared')
        return result, None
    options = dict(backend.runtime_options) if runtime in (
        None, backend.runtime) else {}
    # The task's deploy head (its codebase adapter names the task).
    head = deploy_head_of(model)
    report = head.check_parity(
        model, result.deploy_model, out, inputs, samples,
        runtime or backend.runtime,
        evaluator=_test_evaluator(cfg) if head.decodes_predictions else None,
        **options)
    log(report.format())
    return result, report


def _test_evaluator(cfg: Config):
    """The config's test metric, for the tasks whose deploy head decodes
    predictions (None without ``test_evaluator``)."""
    from mmengine.registry import DATASETS, DefaultScope

    from .from_config import build_test_evaluator
    if not cfg.get('test_evaluator'):
        return None
    with DefaultScope.overwrite_default_scope(cfg.get('default_scope')):
        evaluator = build_test_evaluator(cfg)
        # the metric reads the dataset's classes, as the test loop gives
        # them
        evaluator.dataset_meta = DATASETS.build(
            cfg.test_dataloader.dataset).metainfo
    return evaluator


def deploy_config_of(cfg: Config) -> Optional[DeployConfig]:
    deploy_cfg = cfg.model.get('deploy_cfg')
    return None if deploy_cfg is None else DeployConfig.from_dict(deploy_cfg)


def check_exportable(cfg: Config, backend: Optional[str] = None) -> None:
    """Raise now, before any work, if ``cfg`` cannot be exported for
    ``backend`` (or its ``model.deploy_cfg``'s backend).

    Raises:
        ValueError: If ``backend`` is not a registered deploy target, or
            ``model.deploy_cfg`` is invalid or absent while ``backend`` is
            None.
    """
    if backend is not None:
        get_backend(backend, '--export', deployable=True)
    elif cfg.model.get('deploy_cfg') is None:
        raise ValueError('--export: the config has no model.deploy_cfg; '
                         'name the backend (--export openvino) or add '
                         "MMRazor's deploy_cfg (see docs/get_started.md)")
    deploy_config_of(cfg)


def export_runner_model(runner, config: str, backend: Optional[str] = None,
                        num_samples: int = 256) -> Optional[str]:
    """Export the Runner's calibrated model into its work dir (on rank 0)
    and check parity; see :func:`export_and_check`.

    Returns:
        str, optional: The ``.onnx`` written (None on other ranks).
    """
    from mmengine.dist import get_rank
    if get_rank() != 0:
        return None
    model = getattr(runner.model, 'module', runner.model).eval()
    settings = ExportSettings.resolve(model.deploy_cfg, backend=backend)
    out = resolve_output_path(settings, config, work_dir=runner.work_dir)
    export_and_check(model, runner.cfg, settings, out, num_samples,
                     log=runner.logger.info)
    return out
