"""The whole analysis of a config + checkpoint, as ``tools/analyze.py``
runs it: tables, CSVs, PNGs and optionally a mixed-precision config."""
import csv
import os
import os.path as osp
from dataclasses import asdict
from typing import Dict, Optional, Sequence, Union

import torch
from mmengine.config import Config

from mmrazor_quant.engine.runner.calibration import default_calibrate_cfg
from mmrazor_quant.models.fake_quants.utils import iter_fake_quants
from mmrazor_quant.models.utils import tensor_graph_module
from .build import build_loader, build_quant_model, collect_batches
from .graphwise import analysis_mode, graphwise_error
from .layers import find_quantized_layers
from .layerwise import layerwise_sensitivity
from .metrics import check_metric
from .mixed_precision import (
    float_layers_evaluator,
    rank_layers,
    select_by_accuracy,
    select_by_budget,
    write_mixed_precision_config,
)
from .plots import format_table, plot_histograms, plot_layer_errors, write_csv
from .statistics import quantized_weight_input, weight_statistics

__all__ = ['analyze', 'data_loader_cfg']

DATA_SPLITS = ('calib', 'test')


def data_loader_cfg(cfg: Config, data: str) -> dict:
    """The loader config of ``data``: ``'calib'`` (the calibration loader,
    training digits) or ``'test'`` (``test_dataloader``).

    Raises:
        ValueError: If ``data`` is neither.
    """
    if data == 'test':
        return cfg.test_dataloader
    if data == 'calib':
        test_cfg = cfg.get('test_cfg') or {}
        return test_cfg.get('calibrate_dataloader') or \
            default_calibrate_cfg(cfg)
    raise ValueError(f'data must be one of {DATA_SPLITS}, got {data!r}')


def analyze(cfg: Config,
            checkpoint: Optional[str],
            work_dir: str,
            method: str = 'snr',
            steps: int = 4,
            data: str = 'calib',
            parts: Sequence[str] = ('both', ),
            mixed_budget: Optional[int] = None,
            mixed_bit: Union[int, str] = 8,
            max_drop: Optional[float] = None,
            config_path: Optional[str] = None) -> Dict[str, object]:
    """Graph-wise and layer-wise analysis of a quantized model.

    Writes to ``work_dir``: ``graphwise.csv``, ``layerwise.csv``,
    ``tensor_stats.csv``, ``graphwise_<method>.png`` and
    ``layerwise_<method>.png`` (one bar per quantized layer) and
    ``histogram.png`` (float vs quantized weights and outputs of the most
    sensitive layer); with ``mixed_budget`` or ``max_drop``, also
    ``<config>_mixed.py``, a config keeping the chosen layers at
    ``mixed_bit``.

    Args:
        cfg (Config): The quantization config.
        checkpoint (str, optional): Quantized or float checkpoint (see
            :func:`~.build.build_quant_model`).
        work_dir (str): Output directory.
        method (str): Metric to sort and plot. Defaults to ``'snr'``.
        steps (int): Batches to analyze. Defaults to 4.
        data (str): ``'calib'`` (default; training digits, so a
            mixed-precision choice does not look at the test set) or
            ``'test'``.
        parts (Sequence[str]): Layer-wise parts. Defaults to ``('both',)``.
        mixed_budget (int, optional): Keep at most this many layers at
            ``mixed_bit``. Defaults to None.
        mixed_bit (int | str): 8 or ``'float'``. Defaults to 8.
        max_drop (float, optional): Instead of a fixed budget, add layers
            until the top-1 on the analyzed batches is within ``max_drop``
            points of the float model (layers approximated as float, see
            :func:`~.mixed_precision.float_layers_evaluator`); at most
            ``mixed_budget`` layers if also given.
        config_path (str, optional): The config's file, the ``_base_`` of
            the written mixed config. Defaults to ``cfg.filename``.

    Returns:
        dict: the calibrated ``model``, the ``graphwise``, ``layerwise`` and
        ``stats`` records, the ``files`` written, and
        ``rules``/``mixed_config``/``history`` when asked.
    """
    check_metric(method)
    os.makedirs(work_dir, exist_ok=True)
    model = build_quant_model(cfg, checkpoint)
    batches = collect_batches(model, build_loader(data_loader_cfg(cfg, data)),
                              steps)
    inputs = [x for x, _ in batches]
    print(f'graph-wise analysis on {len(inputs)} batches')
    graphwise = graphwise_error(model, inputs, show_progress=True)
    print(f'layer-wise analysis ({", ".join(parts)})')
    layerwise = layerwise_sensitivity(
        model, inputs, parts=parts, show_progress=True)
    stats = weight_statistics(model)
    files = _write_outputs(model, inputs, graphwise, layerwise, stats,
                           method, work_dir)
    print('\nlayer-wise sensitivity (one layer quantized at a time, error '
          'at the outputs):')
    print(format_table(layerwise, method, limit=15))
    print('\ngraph-wise error (everything quantized, error at each '
          'quantized layer output):')
    print(format_table(graphwise, method, limit=15))
    result: Dict[str, object] = dict(
        model=model, graphwise=graphwise, layerwise=layerwise, stats=stats,
        files=files)
    if mixed_budget is not None or max_drop is not None:
        result.update(
            _mixed(cfg, model, batches, layerwise, method, mixed_budget,
                   mixed_bit, max_drop, config_path, work_dir))
    for name in files:
        print(f'wrote {name}')
    return result


def _write_outputs(model, inputs, graphwise, layerwise, stats, method,
                   work_dir) -> list:
    files = [
        write_csv(graphwise, osp.join(work_dir, 'graphwise.csv')),
        write_csv(layerwise, osp.join(work_dir, 'layerwise.csv')),
        _write_stats(stats, osp.join(work_dir, 'tensor_stats.csv')),
    ]
    layers_only = [r for r in graphwise if r.kind == 'layer']
    files.append(
        plot_layer_errors(
            layers_only, method,
            osp.join(work_dir, f'graphwise_{method}.png'),
            'graph-wise: everything quantized, error at each layer output'))
    first_part = layerwise[0].kind
    files.append(
        plot_layer_errors([r for r in layerwise if r.kind == first_part],
                          method,
                          osp.join(work_dir, f'layerwise_{method}.png'),
                          f'layer-wise: one layer quantized ({first_part}), '
                          'error at the model outputs'))
    worst = rank_layers(layerwise, method)[0]
    files.append(
        _plot_layer_histograms(model, inputs[0], worst,
                               osp.join(work_dir, 'histogram.png')))
    return files


def _write_stats(stats, path: str) -> str:
    rows = [asdict(s) for s in stats]
    with open(path, 'w', newline='') as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    return path


def _plot_layer_histograms(model, x, name: str, path: str) -> str:
    """Weights and outputs of layer ``name``, float vs quantized."""
    gm = tensor_graph_module(model)
    layer = {lay.name: lay for lay in find_quantized_layers(gm)}[name]
    with analysis_mode(gm), torch.no_grad():
        weight = quantized_weight_input(layer.module)
        layer.weight_fake_quant.enable_fake_quant()
        weight_q = layer.weight_fake_quant(weight)
    outputs = {}
    handle = layer.module.register_forward_hook(
        lambda m, a, out: outputs.setdefault(phase, out.detach()))
    try:
        with analysis_mode(gm), torch.no_grad():
            for phase, switch in (('float', False), ('quant', True)):
                for fq in iter_fake_quants(gm):
                    fq.enable_fake_quant(switch)
                gm(x)
    finally:
        handle.remove()
    return plot_histograms([
        (f'{name}: weights', weight, weight_q),
        (f'{name}: output (float model vs quantized model)',
         outputs['float'], outputs['quant']),
    ], path)


def _mixed(cfg, model, batches, layerwise, method, budget, bit, max_drop,
           config_path, work_dir) -> dict:
    out: Dict[str, object] = {}
    if max_drop is None:
        rules = select_by_budget(layerwise, budget, bit, method)
    else:
        evaluate = float_layers_evaluator(model, batches)
        all_float = [(layer.name, None) for layer in find_quantized_layers(
            tensor_graph_module(model))]
        reference = evaluate(all_float)
        rules, history = select_by_accuracy(
            layerwise, evaluate, reference, max_drop, bit, method,
            max_layers=budget)
        out['history'] = history
        print('accuracy-drop search (layers kept, top-1 on the analyzed '
              f'batches; float {reference:.2f}): {history}')
    config_path = config_path or cfg.filename
    stem = osp.splitext(osp.basename(config_path))[0]
    path = write_mixed_precision_config(
        config_path, rules, osp.join(work_dir, f'{stem}_mixed.py'))
    print(f'mixed precision: {len(rules)} layer(s) at {bit}: '
          f'{[name for name, _ in rules]} -> {path}')
    out.update(rules=rules, mixed_config=path)
    return out
