"""Quantize a model as users have it, in four calls, as PPQ's workflow
reads (load -> quantize -> analyse -> export)::

    from mmrazor_quant.apis import front_door as fd
    model = fd.load_model('model.onnx')                 # or an nn.Module
    qmodel = fd.quantize_model(model, 'calib/', backend='openvino',
                               float_nodes=['/head/MatMul'])
    rows = fd.analyse_model(qmodel, 'calib/')           # worst layers first
    result, parity = fd.export_model(qmodel, 'out/model_int8.onnx',
                                     parity_data='calib/')

Everything runs through the registered pieces the config path uses
(``OnnxModel``/``TorchModel``, ``MMArchitectureQuant`` with the backend's
quantizer, the calibration loop, the PTQ passes, the analysis and the
backend's exporter and runtime): there is no second core.
"""
import os.path as osp
import re
from typing import Dict, List, Optional, Sequence, Tuple, Union

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset

from mmrazor_quant.registry import DATASETS, MODELS
from mmrazor_quant.utils.cpu_heap import reuse_freed_memory

__all__ = ['load_model', 'quantize_model', 'analyse_model', 'export_model',
           'calibration_loader', 'module_names_of']

Data = Union[str, Dataset, DataLoader, torch.Tensor, Sequence[torch.Tensor]]


def load_model(model: Union[str, nn.Module, dict], **kwargs) -> nn.Module:
    """An ``OnnxModel`` of a ``.onnx`` path, a ``TorchModel`` of a module,
    or the model a config dict builds; ``kwargs`` go to its constructor.

    Raises:
        ValueError: If a path is not an ``.onnx`` file.
    """
    import mmrazor_quant.frontends  # noqa: F401  registers the types
    if isinstance(model, dict):
        return MODELS.build(dict(model, **kwargs))
    if isinstance(model, nn.Module):
        return MODELS.build(dict(type='mmrazor_quant.TorchModel',
                                 module=model, **kwargs))
    if isinstance(model, str) and model.endswith('.onnx'):
        return MODELS.build(dict(type='mmrazor_quant.OnnxModel', path=model,
                                 **kwargs))
    raise ValueError(f'load_model: {model!r} is neither an .onnx path, an '
                     'nn.Module nor a model config')


def calibration_loader(data: Data, batch_size: int = 8,
                       **dataset_kwargs) -> DataLoader:
    """A loader of ``dict(inputs=...)`` batches: from a folder (a
    ``CalibrationFolderDataset``; ``dataset_kwargs`` such as ``shape``,
    ``dtype``, ``image``, ``input_names``), a dataset, a loader, or
    tensors (one batch each, or a single tensor split into batches)."""
    from torch.utils.data import default_collate
    if isinstance(data, DataLoader):
        return data
    if isinstance(data, str):
        import mmrazor_quant.datasets  # noqa: F401
        data = DATASETS.build(dict(type='mmrazor_quant.'
                                   'CalibrationFolderDataset',
                                   data_root=data, **dataset_kwargs))
    if isinstance(data, torch.Tensor):
        data = list(data.split(batch_size))
    if isinstance(data, (list, tuple)):
        return [dict(inputs=batch) for batch in data]  # type: ignore
    return DataLoader(data, batch_size=batch_size, shuffle=False,
                      collate_fn=default_collate)


def module_names_of(model: nn.Module, names: Sequence[str]) -> List[str]:
    """The submodule names (``net.<name>``) of ONNX node names of an
    ``OnnxModel``, or of module names of a ``TorchModel`` (``net.`` added).

    Raises:
        ValueError: Naming the nodes that no submodule stands for (a node
            rewritten into a function, a fused node, or a typo).
    """
    info = getattr(model, 'onnx_info', None)
    modules = dict(model.named_modules())
    lookup: Dict[str, str] = {}
    if info is not None:
        for key in info.nodes:
            if f'net.{key}' in modules:
                for onnx_name in info.fused.get(key, [info.onnx_name(key)]):
                    lookup.setdefault(onnx_name, f'net.{key}')
    found, missing = [], []
    for name in names:
        module = lookup.get(name) or (f'net.{name}' if f'net.{name}' in
                                      modules else None)
        (found if module else missing).append(module or name)
    if missing:
        raise ValueError(
            f'float_nodes {missing}: no layer of the model has these names '
            '(ONNX node names of conv, linear, norm, activation and pooling '
            'nodes, or module names of a torch model)')
    return found


def quantize_model(model: nn.Module,
                   calib: Data,
                   backend: str = 'openvino',
                   float_nodes: Sequence[str] = (),
                   quantizer: Optional[dict] = None,
                   ptq_passes: Optional[Sequence[dict]] = None,
                   calib_steps: Optional[int] = None,
                   batch_size: int = 8,
                   **dataset_kwargs) -> nn.Module:
    """Quantize ``model`` for ``backend`` and calibrate it on ``calib``.

    Args:
        model (nn.Module): From :func:`load_model`, or a plain
            ``nn.Module`` (wrapped by :func:`load_model`, as
            ``nncf.quantize`` takes one).
        calib: Calibration data (see :func:`calibration_loader`).
        backend (str): A registered backend. Defaults to ``'openvino'``.
        float_nodes (Sequence[str]): Node names (ONNX) or module names
            (torch) kept float. Defaults to ().
        quantizer (dict, optional): A quantizer config instead of the
            backend's default (:func:`~mmrazor_quant.frontends.defaults.
            default_quantizer`).
        ptq_passes (list[dict], optional): PTQ passes, as ``PTQLoop``
            takes them (``dict(type='equalize_cross_layer')`` runs before
            calibration, ``dict(type='adaround')`` after, ...). Defaults
            to bias correction (:data:`~mmrazor_quant.frontends.defaults.
            DEFAULT_PTQ_PASSES`); ``[]`` runs none.
        calib_steps (int, optional): Batches to calibrate on. Defaults to
            all.
        batch_size (int): Defaults to 8.
        **dataset_kwargs: Arguments of the calibration folder dataset.

    Returns:
        MMArchitectureQuant: The calibrated quantized model.
    """
    from mmengine.model import BaseModel

    from mmrazor_quant.engine.runner.calibration import calibrate
    from mmrazor_quant.frontends.defaults import (
        DEFAULT_PTQ_PASSES,
        default_quantizer,
    )
    from mmrazor_quant.ptq.pipeline import (
        build_ptq_passes,
        collect_inputs,
        recording_during_calibration,
        run_ptq_passes,
    )
    if not isinstance(model, BaseModel):
        model = load_model(model)
    mapping = None
    if float_nodes:
        mapping = dict(module_name=[(n, None) for n in
                                    module_names_of(model, float_nodes)])
    if quantizer is None:
        quantizer = default_quantizer(
            backend, **({'qconfig_mapping': mapping} if mapping else {}))
    if ptq_passes is None:
        ptq_passes = [dict(p) for p in DEFAULT_PTQ_PASSES]
    passes = build_ptq_passes(ptq_passes)
    loader = calibration_loader(calib, batch_size,
                                **_folder_kwargs(model, dataset_kwargs))
    steps = calib_steps or len(loader)
    qmodel = MODELS.build(dict(type='mmrazor_quant.MMArchitectureQuant',
                               architecture=model, quantizer=quantizer,
                               forward_modes=('tensor', ),
                               input_shape=_sample_shape(model, loader)))
    def data():
        return collect_inputs(qmodel, loader, steps)

    with reuse_freed_memory():
        run_ptq_passes(qmodel, passes, 'before_calibration', data)
        # the loader is neither shuffled nor augmented: bias correction
        # can take the float means calibration sees
        with recording_during_calibration(qmodel, passes):
            calibrate(qmodel, loader, steps, show_progress=False)
        run_ptq_passes(qmodel, passes, 'after_calibration', data)
    qmodel.eval()
    return qmodel


def _sample_shape(model: nn.Module, loader) -> Optional[Tuple[int, ...]]:
    """The shape of one sample of a single-input torch model's data: the
    tracer then evaluates an example batch, so a torch model that reads its
    own shapes (``n, c, h, w = x.shape``) traces them as sizes, not
    tensors. None for an imported ONNX graph: its shapes are graph ops
    (``Shape``, ``Gather``, ...) that no Python reads, so it traces
    symbolically to the same graph without running an example batch
    (PP-OCRv4's detector: 0.3 CPU s instead of 2.0)."""
    from mmrazor_quant.frontends.imported_model import OnnxModel
    if isinstance(model, OnnxModel):
        return None
    batch = model.data_preprocessor(next(iter(loader)), False)['inputs']
    return tuple(batch.shape[1:]) if isinstance(batch, torch.Tensor) \
        else None


def _folder_kwargs(model: nn.Module, dataset_kwargs: dict) -> dict:
    """A folder's dataset arguments, reading a model with several inputs
    by its input names (one subfolder or ``.npz`` key per input) unless
    told otherwise."""
    names = getattr(getattr(model, 'architecture', model), 'input_names',
                    None)
    if names and len(names) > 1 and 'input_names' not in dataset_kwargs:
        return dict(dataset_kwargs, input_names=list(names))
    return dataset_kwargs


def _inputs(qmodel: nn.Module, data: Data, steps: Optional[int],
            **dataset_kwargs) -> list:
    from mmrazor_quant.ptq.pipeline import collect_inputs
    loader = calibration_loader(data, **_folder_kwargs(qmodel,
                                                       dataset_kwargs))
    return collect_inputs(qmodel, loader, steps or len(loader))


def analyse_model(qmodel: nn.Module, data: Data, kind: str = 'graphwise',
                  steps: Optional[int] = None, **dataset_kwargs) -> list:
    """Error analysis: ``'graphwise'`` (every tensor of the quantized model
    against the float one) or ``'layerwise'`` (each layer quantized
    alone). Rows are ``LayerError`` s, worst SNR first, each with
    ``extra['node']``, the node name of the user's model.
    """
    from mmrazor_quant.analysis.graphwise import graphwise_error, worst_first
    from mmrazor_quant.analysis.layerwise import layerwise_sensitivity
    inputs = _inputs(qmodel, data, steps, **dataset_kwargs)
    if kind == 'graphwise':
        rows = graphwise_error(qmodel, inputs)
    elif kind == 'layerwise':
        rows = layerwise_sensitivity(qmodel, inputs)
    else:
        raise ValueError(f"kind must be 'graphwise' or 'layerwise', got "
                         f'{kind!r}')
    architecture = qmodel.architecture
    sanitized = {re.sub(r'\W', '_', n): n
                 for n, _ in architecture.named_modules() if n}
    for row in rows:
        row.extra['node'] = _node_name(architecture, row.name, sanitized)
    return worst_first(rows, 'snr')


def _node_name(architecture: nn.Module, name: str,
               sanitized: Dict[str, str]) -> str:
    """The user's name behind an analysis row: a layer's module name, or
    an activation fake quant's (named after the node it follows)."""
    if name.startswith('act_fake_quants.'):
        name = name[len('act_fake_quants.'):]
        name = sanitized.get(name, name)
    key = name[len('net.'):] if name.startswith('net.') else name
    onnx_name = getattr(architecture, 'onnx_name', None)
    return onnx_name(key) if onnx_name is not None else key


def export_model(qmodel: nn.Module,
                 out: str,
                 backend: str = 'openvino',
                 parity_data: Optional[Data] = None,
                 runtimes: Optional[Sequence[str]] = None,
                 example: Optional[torch.Tensor] = None,
                 **exporter_kwargs) -> Tuple[object, Dict[str, object]]:
    """Export with the backend's exporter and compare the file with the
    simulation in each of ``runtimes`` (the parity pipeline,
    :func:`~mmrazor_quant.deploy.parity.run_parity`).

    Args:
        qmodel (nn.Module): From :func:`quantize_model`.
        out (str): Where to write the ``.onnx`` (other files go beside it).
        backend (str): A registered backend with an exporter. Defaults to
            ``'openvino'``.
        parity_data: Inputs of the parity check (see
            :func:`calibration_loader`). Defaults to None (no check).
        runtimes (Sequence[str], optional): Registered runtimes to compare
            in. Defaults to the backend's runtime and, where its export is
            a standard QDQ ONNX, every runtime that loads any such file
            (:func:`~mmrazor_quant.deploy.runtimes.parity_runtimes`): an
            OpenVINO export in OpenVINO and onnxruntime.
        example (Tensor, optional): The export's example batch. Defaults
            to the first parity batch.
        **exporter_kwargs: The exporter's arguments.

    Returns:
        tuple: The ``ExportResult`` and ``{runtime: ParityReport}`` (empty
        without ``parity_data``); each report also gives the simulation's
        agreement with itself in float64 (``float64_sqnr_db``), the most a
        runtime can be expected to agree with it.
    """
    from mmrazor_quant.backends import get_backend
    from mmrazor_quant.deploy import run_parity
    from mmrazor_quant.deploy.exporters import build_exporter
    from mmrazor_quant.deploy.runtimes import parity_runtimes
    from mmrazor_quant.utils.model_inputs import select_samples
    target = get_backend(backend, 'backend', deployable=True)
    if runtimes is None:
        runtimes = parity_runtimes(target)
    inputs = _inputs(qmodel, parity_data, None) if parity_data is not None \
        else None
    if example is None and not inputs:
        raise ValueError('export_model needs parity_data or an example '
                         'batch')
    if example is None:
        example = select_samples(inputs[0], slice(0, 2))
    exporter = build_exporter(target.name, **exporter_kwargs)
    exporter.prepare_model(qmodel)
    result = exporter.export(qmodel, example, out)
    reports = {}
    for runtime in runtimes if inputs else ():
        # the backend's own runtime with its options (TensorRT's float
        # arithmetic in onnxruntime)
        options = dict(target.runtime_options) \
            if runtime == target.runtime else {}
        reports[runtime] = run_parity(result.deploy_model, result.onnx_path,
                                      inputs, runtime, float64_floor=True,
                                      **options)
    return result, reports


def default_out(model_path: str, backend: str) -> str:
    """``<model stem>_<backend>_int8.onnx`` beside the model."""
    stem = osp.splitext(model_path)[0]
    return f'{stem}_{backend}_int8.onnx'


def quantize_file(model: str,
                  calib: str,
                  backend: str = 'openvino',
                  out: Optional[str] = None,
                  float_nodes: Sequence[str] = (),
                  batch_size: int = 8,
                  calib_steps: Optional[int] = None,
                  log=print,
                  **dataset_kwargs) -> Tuple[object, Dict[str, object]]:
    """``tools/quantize_model.py``: load, quantize, export, compare, and
    log the parity and the operations that stay float.

    Returns:
        tuple: See :func:`export_model`.
    """
    from mmrazor_quant.frontends.dispatch import float_ops, format_float_ops
    if not model.endswith('.onnx'):
        model_obj = load_model(dict(type='mmrazor_quant.TorchModel',
                                    module=model))
    else:
        model_obj = load_model(model)
    qmodel = quantize_model(model_obj, calib, backend, float_nodes,
                            calib_steps=calib_steps, batch_size=batch_size,
                            **dataset_kwargs)
    out = out or default_out(model, backend)
    result, reports = export_model(
        qmodel, out, backend,
        parity_data=calibration_loader(calib, batch_size, **dataset_kwargs))
    log(f'wrote {", ".join(result.files.values())}')
    for runtime, report in reports.items():
        log(f'parity in {runtime}: {report.sqnr_db:.1f} dB SQNR, at most '
            f'{report.max_step_diff:.2f} output steps apart (the '
            f'simulation in float64: {report.float64_sqnr_db:.1f} dB)')
    rows = float_ops(qmodel)
    log(f'{len(rows)} operations stay float:\n{format_float_ops(rows)}')
    return result, reports
