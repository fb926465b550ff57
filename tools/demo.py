"""The MNIST demo behind ``make demo``: fp32 training, PTQ on every backend,
LSQ QAT at W8A8 and W4A4, a small ViT, and one table of top-1 accuracies.

Every step is a config under ``configs/`` run by mmengine's Runner, as
``tools/train.py`` / ``tools/ptq.py`` would run it, in this one process (it
saves re-importing the stack for each of the twelve runs):

1. train ``configs/fp32/{resnet18,mobilenetv2,vit}_mnist.py`` and write their
   final weights to ``work_dirs/fp32/<model>/float.pth``, the
   ``float_checkpoint`` of the quantization configs;
2. ``PTQLoop`` for ResNet-18 on native, OpenVINO, TensorRT and academic
   settings and for MobileNetV2 on OpenVINO (W8A8);
3. ``LSQEpochBasedLoop`` for ResNet-18, W8A8 (OpenVINO) and W4A4 (academic,
   first and last layer at 8 bit);
4. the ViT (mmcls's VisionTransformer, 4 layers of width 64) with
   OpenVINO's transformer placement: PTQ W8A8 and LSQ/LSQ+ QAT W8A8.

The table goes to stdout and to ``work_dirs/demo/results_<task>.md``.
Accuracies are on the 1,000 MNIST5k test digits (one digit = 0.1 points).

Every task's demo is one file under ``configs/demo/`` (``--task``): its
metric, its fp32 configs and its quantization runs with the drop each may
lose, and optionally ``scale`` (the metric is shown times it, e.g. 100 for
an AP on 0..1, and ``allowed`` is in those units) and ``data`` (what the
metric is measured on, for the summary line). ``make demo`` is ``--task
cls``.

With ``--export`` every quantized model whose backend deploys (OpenVINO,
TensorRT) is also exported to QDQ ONNX as ``tools/export.py`` would, and
the table gets its parity with the simulation: the lowest SQNR over the
task's head outputs, in dB, first in the backend's own runtime (OpenVINO;
onnxruntime for TensorRT, which is not installed here), then in brackets
in the runtimes of the table's other backends (onnxruntime and OpenVINO
for OpenVINO and TensorRT rows), whose arithmetic the backend's simulation
does not model.

Usage:
    python tools/demo.py [--task TASK] [--reuse-fp32] [--only NAME ...]
                         [--export] [--verbose]
"""
import argparse
import os
import os.path as osp
import sys
import time
import traceback
from typing import Dict, List, Optional, Tuple

import torch
from mmengine.config import Config
from mmengine.hooks import Hook
from mmengine.runner import Runner
from mmengine.runner.checkpoint import weights_to_cpu

from mmrazor_quant.backends import backend_names, get_backend
from mmrazor_quant.registry import register_all_modules
from mmrazor_quant.utils import register_checkpoint_safe_globals
from mmrazor_quant.utils.config_checks import check_loop_cfgs, load_config
from mmrazor_quant.utils.data_pipeline import add_test_pipeline
from mmrazor_quant.utils.quiet import quiet_runner_logs, quiet_stack_warnings

REPO = osp.dirname(osp.dirname(osp.abspath(__file__)))
WORK_DIR = 'work_dirs'
DEMO_DIR = osp.join('configs', 'demo')
DEMO_KEYS = ('metric', 'fp32', 'runs')
RUN_KEYS = ('model', 'method', 'backend', 'bits', 'config', 'allowed')

class LastValMetrics(Hook):
    """Keeps the metrics of the latest validation."""

    def __init__(self) -> None:
        self.metrics: Dict[str, float] = {}

    def after_val_epoch(self, runner, metrics=None) -> None:
        self.metrics = dict(metrics or {})


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description='fp32 -> PTQ / LSQ QAT on MNIST, one results table')
    parser.add_argument(
        '--task',
        default='cls',
        choices=demo_tasks(),
        help='which demo of configs/demo/ to run. Defaults to cls.')
    parser.add_argument(
        '--reuse-fp32',
        action='store_true',
        help='evaluate existing work_dirs/fp32/*/float.pth instead of '
        'training the fp32 models again')
    parser.add_argument(
        '--only',
        nargs='+',
        metavar='NAME',
        help='run only the quantization configs whose file name contains '
        'one of these strings (e.g. lsq ptq_openvino)')
    parser.add_argument(
        '--export',
        action='store_true',
        help='export each model whose backend deploys and add its parity '
        "to the table: in its backend's runtime, then in the runtimes of "
        "the table's other backends")
    parser.add_argument(
        '--verbose', action='store_true', help='show the runners\' logs')
    return parser.parse_args()


def demo_tasks() -> List[str]:
    return sorted(
        osp.splitext(name)[0]
        for name in os.listdir(osp.join(REPO, DEMO_DIR))
        if name.endswith('.py'))


def load_demo(task: str) -> Config:
    """The task's demo file, checked: a wrong key fails here, not after an
    hour of training."""
    path = osp.join(REPO, DEMO_DIR, task + '.py')
    demo = Config.fromfile(path)
    for key in DEMO_KEYS:
        if key not in demo:
            raise KeyError(f'{path}: missing `{key}`')
    for i, run in enumerate(demo.runs):
        missing = [key for key in RUN_KEYS if key not in run]
        if missing:
            raise KeyError(f'{path}: runs[{i}] misses {missing}')
        if run['model'] not in demo.fp32:
            raise KeyError(f'{path}: runs[{i}].model {run["model"]!r} is '
                           f'not a key of `fp32` {sorted(demo.fp32)}')
    return demo


def load_cfg(config: str, work_dir: str, name: str, verbose: bool,
             **options) -> Config:
    # As the tools load a config: uninstalled codebases named, the test
    # pipeline handed to the quantized model, loops checked.
    cfg = add_test_pipeline(load_config(osp.join(REPO, config), options))
    check_loop_cfgs(cfg)
    cfg.work_dir = work_dir
    # One process runs many Runners: each needs its own logger/visualizer.
    cfg.experiment_name = f'{name}_{time.strftime("%Y%m%d_%H%M%S")}'
    cfg.log_level = 'INFO' if verbose else 'WARNING'
    cfg.launcher = 'none'
    return cfg


def build_quiet(cfg: Config) -> Runner:
    """``Runner.from_cfg`` without the stack's deprecation log lines."""
    runner = Runner.from_cfg(cfg)
    quiet_runner_logs(runner)
    return runner


def float_checkpoint(config: str) -> str:
    stem = osp.splitext(osp.basename(config))[0]
    return osp.join(WORK_DIR, 'fp32', stem, 'float.pth')


def save_float(runner: Runner, path: str) -> None:
    """The trained weights alone (no optimizer or log state), written
    atomically: a checkpoint any ``torch.load(weights_only=True)`` reads."""
    model = runner.model.module if hasattr(runner.model,
                                           'module') else runner.model
    checkpoint = dict(
        meta=dict(epoch=runner.epoch, iter=runner.iter,
                  config=runner.cfg.filename),
        state_dict=weights_to_cpu(model.state_dict()))
    tmp = path + '.tmp'
    torch.save(checkpoint, tmp)
    os.replace(tmp, path)


def run_fp32(config: str, metric: str, args: argparse.Namespace) -> float:
    """Train (or, with --reuse-fp32, evaluate) one fp32 model; its metric."""
    ckpt = float_checkpoint(config)
    work_dir = osp.dirname(ckpt)
    name = osp.splitext(osp.basename(config))[0]
    if args.reuse_fp32 and osp.exists(ckpt):
        cfg = load_cfg(config, work_dir, name, args.verbose)
        cfg.load_from = ckpt
        return build_quiet(cfg).test()[metric]
    cfg = load_cfg(config, work_dir, name, args.verbose)
    runner = build_quiet(cfg)
    recorder = LastValMetrics()
    runner.register_hook(recorder)
    runner.train()
    save_float(runner, ckpt)
    return recorder.metrics[metric]


def run_quant(config: str, float_ckpt: str, metric: str,
              args: argparse.Namespace) -> Tuple[float, Runner]:
    """PTQ (test loop) or QAT (train loop) from a config; its metric and
    the Runner holding the quantized model."""
    name = osp.splitext(osp.basename(config))[0]
    cfg = load_cfg(
        config, osp.join(WORK_DIR, 'demo', name), name, args.verbose,
        **{'model.float_checkpoint': float_ckpt})
    runner = build_quiet(cfg)
    if cfg.test_cfg.get('type') == 'mmrazor_quant.PTQLoop':
        return runner.test()[metric], runner
    recorder = LastValMetrics()
    runner.register_hook(recorder)
    runner.train()
    return recorder.metrics['qat.' + metric], runner


def parity_runtimes(backends: List[str]) -> List[str]:
    """The registered runtimes of the deployable ``backends``."""
    deployable = set(backend_names(deployable=True))
    return sorted({
        get_backend(name, 'backend', deployable=True).runtime
        for name in backends if name in deployable
    } - {None})


def export_parity(runner: Runner, config: str, backend: str,
                  runtimes: List[str]) -> Dict[str, float]:
    """Export the Runner's model for ``backend`` into its work dir; the
    lowest head-output SQNR against the simulation (dB) per runtime, the
    backend's own runtime first."""
    from mmrazor_quant.deploy.config_export import (
        ExportSettings,
        export_and_check,
        resolve_output_path,
    )
    model = getattr(runner.model, 'module', runner.model).eval()
    settings = ExportSettings.resolve(model.deploy_cfg, backend=backend)
    out = resolve_output_path(settings, config, work_dir=runner.work_dir)
    own = get_backend(backend, 'backend', deployable=True).runtime
    sqnr = {}
    for runtime in sorted(runtimes, key=lambda r: r != own):
        _, report = export_and_check(model, runner.cfg, settings, out,
                                     log=lambda line: None, runtime=runtime)
        sqnr[runtime] = report.sqnr_db
    return sqnr


def format_parity(sqnr: Optional[Dict[str, float]]) -> str:
    """``openvino 37.4 (onnxruntime 33.4)``: own runtime first."""
    if not sqnr:
        return ''
    (own, first), *others = sqnr.items()
    return f'{own} {first:.1f}' + ''.join(
        f' ({runtime} {value:.1f})' for runtime, value in others)


def format_table(rows: List[dict], metric: str, parity: bool) -> str:
    header = (f'| model | method | backend | bits | fp32 {metric} | '
              f'quantized {metric} | delta | target |')
    if parity:
        header += ' export parity, SQNR dB: its runtime (the other) |'
    lines = [header, '|' + '---|' * (8 + parity)]
    for r in rows:
        quant = f'{r["quant"]:.2f}' if r['quant'] is not None else 'failed'
        delta = (f'{r["quant"] - r["fp32"]:+.2f}'
                 if r['quant'] is not None else '')
        # Compare in steps of 0.01 points (top-1 moves in steps of 0.1, one
        # digit), not in floats where 97.4 - 97.1 > 0.3.
        ok = r['quant'] is not None and round(
            (r['fp32'] - r['quant']) * 100) <= round(r['allowed'] * 100)
        lines.append(
            f'| {r["model"]} | {r["method"]} | {r["backend"]} | '
            f'{r["bits"]} | {r["fp32"]:.2f} | {quant} | {delta} | '
            f'>= -{r["allowed"]} {"ok" if ok else "MISSED"} |' +
            (f' {format_parity(r["parity"])} |' if parity else ''))
    return '\n'.join(lines)


def main() -> int:
    args = parse_args()
    demo = load_demo(args.task)
    os.chdir(REPO)
    quiet_stack_warnings()
    register_all_modules(init_default_scope=False)
    register_checkpoint_safe_globals()
    start = time.time()

    def log(msg: str) -> None:
        print(f'[demo {time.time() - start:6.0f} s] {msg}', flush=True)

    metric = demo.metric
    scale = demo.get('scale', 1)
    runs = [r for r in demo.runs if not args.only or any(
        key in osp.basename(r['config']) for key in args.only)]
    fp32: Dict[str, float] = {}
    for model in sorted({r['model'] for r in runs},
                        key=list(demo.fp32).index):
        config = demo.fp32[model]
        what = 'evaluating' if args.reuse_fp32 and osp.exists(
            float_checkpoint(config)) else 'training'
        log(f'fp32 {model}: {what} {config}')
        fp32[model] = scale * run_fp32(config, metric, args)
        log(f'fp32 {model}: {metric} {fp32[model]:.2f}')

    deployable = backend_names(deployable=True)
    runtimes = parity_runtimes([r['backend'] for r in demo.runs])
    rows = []
    for run in runs:
        model, method, backend, bits, config, allowed = (
            run[key] for key in RUN_KEYS)
        log(f'{method} {backend} {bits} {model}: {config}')
        quant: Optional[float] = None
        parity: Dict[str, float] = {}
        try:
            quant, runner = run_quant(
                config, float_checkpoint(demo.fp32[model]), metric, args)
            quant *= scale
            log(f'{method} {backend} {bits} {model}: {metric} '
                f'{quant:.2f}')
            if args.export and backend in deployable:
                parity = export_parity(runner, config, backend, runtimes)
                log(f'{method} {backend} {bits} {model}: export parity '
                    f'{format_parity(parity)} dB')
        except Exception:  # one broken backend must not hide the others
            traceback.print_exc()
            log(f'{method} {backend} {bits} {model}: FAILED (see above)')
        rows.append(dict(model=model, method=method, backend=backend,
                         bits=bits, fp32=fp32[model], quant=quant,
                         allowed=allowed, parity=parity))

    wall = time.time() - start
    table = format_table(rows, metric, args.export)
    data = demo.get('data',
                    'MNIST5k, 1,000 test digits (1 digit = 0.1 points)')
    summary = (f'{data}; '
               f'total wall time {wall / 60:.1f} min on '
               f'{torch.get_num_threads()} threads.')
    print('\n' + table + '\n\n' + summary)
    results = osp.join(WORK_DIR, 'demo', f'results_{args.task}.md')
    os.makedirs(osp.dirname(results), exist_ok=True)
    with open(results, 'w') as f:
        f.write(f'# mmrazor_quant demo ({args.task})\n\n' + table +
                '\n\n' + summary + '\n')
    return 0 if all('MISSED' not in line
                    for line in table.splitlines()) else 1


if __name__ == '__main__':
    sys.exit(main())
