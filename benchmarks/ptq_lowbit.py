"""Low-bit PTQ on MNIST: fp32, naive PTQ, AdaRound, BRECQ and QDrop at
W4A4, W2A4 and W4A8 for ResNet-18 and MobileNetV2, with wall times.

Each run is what ``tools/ptq.py`` does with the config
``configs/quantization/ptq/advanced/<method>_<bits>_<model>_mnist.py``: a
Runner traces the model over the fp32 checkpoint, ``PTQLoop`` calibrates on
training digits, runs the config's ``ptq_passes``, saves ``model_ptq.pth``
and tests on the 1,000 MNIST5k test digits. The wall time is that of
``runner.test()`` (calibration + pass + save + test), with the load average
of the machine when the run ended. fp32 is ``tools/test.py`` on the fp32
config and checkpoint.

Checkpoints are read from ``work_dirs/fp32/<model>_mnist/float.pth`` (what
``tools/demo.py`` writes) unless ``--checkpoint MODEL=PATH`` is given.

Usage:
    OMP_NUM_THREADS=1 python benchmarks/ptq_lowbit.py
        [--models resnet18 mobilenetv2] [--bits W4A4 W2A4 W4A8]
        [--methods naive adaround brecq qdrop] [--iters N]
        [--num-samples N] [--seed N] [--checkpoint resnet18=PATH]
        [--out FILE.md]
"""
import argparse
import os
import os.path as osp
import sys
import time
from typing import Callable, Dict, List, Optional

import torch
from mmengine.config import Config

REPO = osp.dirname(osp.dirname(osp.abspath(__file__)))
MODELS_ = {'resnet18': 'ResNet-18', 'mobilenetv2': 'MobileNetV2'}
BITS = ('W4A4', 'W2A4', 'W4A8')
METHODS = ('naive', 'adaround', 'brecq', 'qdrop')
RECONSTRUCTION = ('adaround', 'brecq', 'qdrop')
CONFIG_DIR = 'configs/quantization/ptq/advanced'
HEADER = ('| model | bits | method | top-1 | vs fp32 | vs naive | '
          'wall time (s) | load avg |\n|---|---|---|---|---|---|---|---|')


def parse_args(argv: Optional[List[str]] = None) -> argparse.Namespace:
    """Command line (see the module docstring)."""
    p = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    p.add_argument('--models', nargs='+', default=list(MODELS_),
                   choices=list(MODELS_))
    p.add_argument('--bits', nargs='+', default=list(BITS), choices=BITS)
    p.add_argument('--methods', nargs='+', default=list(METHODS),
                   choices=METHODS)
    p.add_argument('--iters', type=int,
                   help='override the configs\' reconstruction steps per unit')
    p.add_argument('--num-samples', type=int,
                   help='override the configs\' reconstruction samples')
    p.add_argument('--seed', type=int,
                   help='override the configs\' seed (calibration batches '
                   'and reconstruction)')
    p.add_argument('--checkpoint', nargs='+', default=[],
                   metavar='MODEL=PATH', help='fp32 checkpoint per model')
    p.add_argument('--threads', type=int, default=1,
                   help='torch threads. Defaults to 1.')
    p.add_argument('--work-dir', default='work_dirs/ptq_lowbit')
    p.add_argument('--out', help='also write the table to this file')
    return p.parse_args(argv)


def checkpoints(pairs: List[str], models: List[str]) -> Dict[str, str]:
    """fp32 checkpoint of each model: ``--checkpoint`` or demo.py's.

    Raises:
        ValueError: If a ``--checkpoint`` entry is not ``MODEL=PATH`` with
            a known model.
        FileNotFoundError: If a checkpoint does not exist.
    """
    paths = {m: f'work_dirs/fp32/{m}_mnist/float.pth' for m in models}
    for pair in pairs:
        model, sep, path = pair.partition('=')
        if not sep or model not in MODELS_:
            raise ValueError(f'--checkpoint takes MODEL=PATH with MODEL in '
                             f'{list(MODELS_)}, got {pair!r}')
        paths[model] = path
    for model in models:
        if not osp.isfile(paths[model]):
            raise FileNotFoundError(
                f'fp32 checkpoint of {model} not found: {paths[model]}. '
                'Run `make demo` (tools/demo.py) or pass --checkpoint.')
    return paths


def prepare(cfg: Config, work_dir: str) -> Config:
    """A config for a quiet, non-distributed Runner in ``work_dir``."""
    cfg.work_dir = work_dir
    cfg.launcher = 'none'
    cfg.log_level = 'INFO'
    cfg.default_hooks = dict(
        cfg.get('default_hooks', {}),
        logger=dict(type='LoggerHook', interval=1000))
    return cfg


def run_test(cfg: Config) -> float:
    """``runner.test()``; returns top-1 in percent."""
    from mmengine.runner import Runner
    runner = Runner.from_cfg(cfg)
    return float(runner.test()['accuracy/top1'])


def fp32_top1(model: str, ckpt: str, work_dir: str) -> float:
    """What ``tools/test.py configs/fp32/<model>_mnist.py CKPT`` gives."""
    cfg = Config.fromfile(f'configs/fp32/{model}_mnist.py')
    cfg.load_from = ckpt
    return run_test(prepare(cfg, osp.join(work_dir, f'fp32_{model}')))


def ptq_config(model: str, bits: str, method: str, ckpt: str,
               args: argparse.Namespace) -> Config:
    """The advanced PTQ config of one cell, with the command line's
    overrides of the reconstruction settings."""
    name = f'{method}_{bits.lower()}_{model}_mnist'
    cfg = Config.fromfile(osp.join(CONFIG_DIR, name + '.py'))
    cfg.model.float_checkpoint = ckpt
    if args.seed is not None:
        cfg.randomness = dict(cfg.get('randomness', {}), seed=args.seed)
        name += f'_seed{args.seed}'
    overrides = dict(iters=args.iters, num_samples=args.num_samples,
                     seed=args.seed)
    for ptq_pass in cfg.test_cfg.get('ptq_passes', []):
        if ptq_pass['type'] in RECONSTRUCTION:
            ptq_pass.update(
                {k: v for k, v in overrides.items() if v is not None})
    return prepare(cfg, osp.join(args.work_dir, name))


def row(name: str, bits: str, method: str, top1: float, fp32: float,
        naive: Optional[float], seconds: Optional[float]) -> str:
    """One Markdown table row."""
    vs_naive = '–' if naive is None or method == 'naive' else \
        f'{top1 - naive:+.1f}'
    wall = '–' if seconds is None else f'{seconds:.0f}'
    load = '–' if seconds is None else f'{os.getloadavg()[0]:.1f}'
    return (f'| {name} | {bits} | {method} | {top1:.1f} | '
            f'{top1 - fp32:+.1f} | {vs_naive} | {wall} | {load} |')


def bench_model(model: str, ckpt: str, args: argparse.Namespace,
                emit: Callable[[str], None]) -> None:
    """fp32, then every (bits, method) cell of one model; ``emit`` gets
    each table row as soon as it is measured."""
    name = MODELS_[model]
    fp32 = fp32_top1(model, ckpt, args.work_dir)
    emit(f'| {name} | fp32 | – | {fp32:.1f} | – | – | – | – |')
    for bits in args.bits:
        naive = None
        for method in args.methods:
            cfg = ptq_config(model, bits, method, ckpt, args)
            start = time.time()
            top1 = run_test(cfg)
            seconds = time.time() - start
            if method == 'naive':
                naive = top1
            emit(row(name, bits, method, top1, fp32, naive, seconds))


def main(argv: Optional[List[str]] = None) -> int:
    """Run the grid and print (and optionally write) the table."""
    args = parse_args(argv)
    os.chdir(REPO)
    sys.path.insert(0, REPO)
    torch.set_num_threads(args.threads)
    from mmrazor_quant.registry import register_all_modules
    from mmrazor_quant.utils import register_checkpoint_safe_globals
    register_all_modules(init_default_scope=False)
    register_checkpoint_safe_globals()
    paths = checkpoints(args.checkpoint, args.models)
    lines = [HEADER]

    def emit(line: str) -> None:
        lines.append(line)
        print('TABLE ' + line, flush=True)

    for model in args.models:
        bench_model(model, paths[model], args, emit)
    table = '\n'.join(lines)
    print(table)
    if args.out:
        with open(args.out, 'w') as f:
            f.write(table + '\n')
    return 0


if __name__ == '__main__':
    sys.exit(main())
