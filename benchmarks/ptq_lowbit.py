"""Low-bit PTQ on MNIST: fp32, naive PTQ, AdaRound, BRECQ and QDrop at
W4A4, W2A4 and W4A8 for ResNet-18 and MobileNetV2, with wall times.

Every run builds the model of a ``configs/quantization/ptq/advanced``
config, calibrates it on training digits (``calibrate_steps`` batches of 64,
test pipeline), runs the method's PTQ pass (the same functions
``PTQLoop(ptq_passes=...)`` runs) and reports top-1 on the 1,000 MNIST5k
test digits. The wall time covers calibration and the pass.

fp32 checkpoints are read from ``work_dirs/fp32/<config>/float.pth`` (what
``tools/demo.py`` writes); a missing one is trained from
``configs/fp32/<model>_mnist.py`` first.

Usage:
    python benchmarks/ptq_lowbit.py [--models resnet18 mobilenetv2]
        [--bits W4A4 W2A4 W4A8] [--methods naive adaround brecq qdrop]
        [--iters 300] [--num-samples 512] [--out FILE.md]
"""
import argparse
import copy
import os
import os.path as osp
import sys
import time

import torch
from mmengine.config import Config

REPO = osp.dirname(osp.dirname(osp.abspath(__file__)))
MODELS_ = {
    'resnet18': ('ResNet-18', 'configs/fp32/resnet18_mnist.py'),
    'mobilenetv2': ('MobileNetV2', 'configs/fp32/mobilenetv2_mnist.py'),
}
MEAN, STD = 33.32, 78.57


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    p.add_argument('--models', nargs='+', default=list(MODELS_))
    p.add_argument('--bits', nargs='+', default=['W4A4', 'W2A4', 'W4A8'])
    p.add_argument('--methods', nargs='+',
                   default=['naive', 'adaround', 'brecq', 'qdrop'])
    p.add_argument('--iters', type=int, default=300,
                   help='reconstruction steps per layer/block')
    p.add_argument('--num-samples', type=int, default=512)
    p.add_argument('--calibrate-steps', type=int, default=16)
    p.add_argument('--seed', type=int, default=0)
    p.add_argument('--out', help='also write the table to this file')
    return p.parse_args()


def load_digits(channels: int):
    """Normalised (train, train labels, test, test labels) tensors."""
    from mmrazor_quant.datasets.mnist5k import (find_mnist5k_file,
                                                load_mnist5k_arrays,
                                                split_mnist5k_indices)
    images, labels = load_mnist5k_arrays(find_mnist5k_file())
    out = []
    for split in ('train', 'test'):
        idx = split_mnist5k_indices(labels, split)
        x = (torch.from_numpy(images[idx]).float()[:, None] - MEAN) / STD
        out += [x.repeat(1, channels, 1, 1), torch.from_numpy(labels[idx])]
    return out


def float_checkpoint(model: str) -> str:
    stem = osp.splitext(osp.basename(MODELS_[model][1]))[0]
    return osp.join(REPO, 'work_dirs', 'fp32', stem, 'float.pth')


def train_fp32(model: str, path: str) -> None:
    """Train the fp32 config and save its weights where demo.py does."""
    from mmengine.runner import Runner
    from mmengine.runner.checkpoint import weights_to_cpu
    cfg = Config.fromfile(osp.join(REPO, MODELS_[model][1]))
    cfg.work_dir = osp.dirname(path)
    cfg.launcher = 'none'
    cfg.log_level = 'WARNING'
    runner = Runner.from_cfg(cfg)
    runner.train()
    net = getattr(runner.model, 'module', runner.model)
    os.makedirs(osp.dirname(path), exist_ok=True)
    torch.save(dict(state_dict=weights_to_cpu(net.state_dict())),
               path + '.tmp')
    os.replace(path + '.tmp', path)


@torch.no_grad()
def top1(fn, images, labels, batch_size: int = 250) -> float:
    correct = 0
    for x, y in zip(images.split(batch_size), labels.split(batch_size)):
        correct += int((fn(x).argmax(1) == y).sum())
    return 100.0 * correct / len(labels)


def build(config: str, ckpt: str):
    from mmrazor_quant.registry import MODELS
    cfg = Config.fromfile(osp.join(REPO, config))
    model_cfg = copy.deepcopy(cfg.model)
    # Load the float weights before the quantizer traces the architecture.
    architecture = MODELS.build(model_cfg.architecture)
    state = torch.load(ckpt, map_location='cpu', weights_only=True)
    architecture.load_state_dict(state.get('state_dict', state))
    model_cfg.architecture = architecture
    model_cfg.float_checkpoint = None
    model_cfg.forward_modes = ('tensor', )
    return MODELS.build(model_cfg).eval(), cfg


@torch.no_grad()
def calibrate(model, inputs, batch_size: int = 64) -> None:
    from mmrazor_quant.models.fake_quants import (check_calibrated,
                                                  disable_fake_quant,
                                                  disable_observer,
                                                  enable_fake_quant,
                                                  enable_observer)
    enable_observer(model)
    disable_fake_quant(model)
    for x in inputs.split(batch_size):
        model(x, mode='tensor')
    disable_observer(model)
    enable_fake_quant(model)
    check_calibrated(model)


def method_passes(method: str, args) -> list:
    common = dict(iters=args.iters, num_samples=args.num_samples,
                  seed=args.seed)
    return {
        'naive': [],
        'adaround': [dict(type='adaround', **common)],
        'brecq': [dict(type='brecq', **common)],
        'qdrop': [dict(type='qdrop', drop_prob=0.5, **common)],
    }[method]


def run_one(config, ckpt, method, data, args) -> tuple:
    from mmrazor_quant.ptq import build_ptq_passes, run_ptq_passes
    train_x, _, test_x, test_y = data
    torch.manual_seed(args.seed)
    model, _ = build(config, ckpt)
    start = time.time()
    calib = train_x[:args.calibrate_steps * 64]
    passes = build_ptq_passes(method_passes(method, args))
    run_ptq_passes(model, passes, 'before_calibration', lambda: [calib])
    calibrate(model, calib)
    run_ptq_passes(model, passes, 'after_calibration', lambda: [calib])
    seconds = time.time() - start
    acc = top1(lambda x: model(x, mode='tensor'), test_x, test_y)
    return acc, seconds


def main() -> int:
    args = parse_args()
    sys.path.insert(0, REPO)
    os.chdir(REPO)
    torch.set_num_threads(2)
    from mmrazor_quant.registry import register_all_modules
    from mmrazor_quant.utils import register_checkpoint_safe_globals
    register_all_modules()
    register_checkpoint_safe_globals()
    lines = ['| model | bits | method | top-1 | delta vs fp32 | wall time (s) |',
             '|---|---|---|---|---|---|']
    for model in args.models:
        name, fp32_config = MODELS_[model]
        ckpt = float_checkpoint(model)
        if not osp.exists(ckpt):
            print(f'[{name}] training fp32 ({fp32_config}) ...', flush=True)
            train_fp32(model, ckpt)
        data = load_digits(3 if model == 'mobilenetv2' else 1)
        fp_model, _ = build(
            f'configs/quantization/ptq/advanced/qdrop_w4a4_{model}_mnist.py',
            ckpt)
        fp32 = top1(lambda x: fp_model.architecture(x, mode='tensor'),
                    data[2], data[3])
        lines.append(f'| {name} | fp32 | - | {fp32:.1f} | - | - |')
        print(lines[-1], flush=True)
        for bits in args.bits:
            config = (f'configs/quantization/ptq/advanced/'
                      f'qdrop_{bits.lower()}_{model}_mnist.py')
            for method in args.methods:
                acc, seconds = run_one(config, ckpt, method, data, args)
                lines.append(f'| {name} | {bits} | {method} | {acc:.1f} | '
                             f'{acc - fp32:+.1f} | {seconds:.0f} |')
                print(lines[-1], flush=True)
    table = '\n'.join(lines)
    print(table)
    if args.out:
        with open(args.out, 'w') as f:
            f.write(table + '\n')
    return 0


if __name__ == '__main__':
    sys.exit(main())
