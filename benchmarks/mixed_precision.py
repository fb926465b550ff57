"""Automatic mixed precision on the MNIST MobileNetV2 at W4A4 PTQ.

1. plain W4A4 PTQ (configs/quantization/ptq/mixed/
   ptq_academic_w4a4_mobilenetv2_mnist.py): calibrate on training digits,
   top-1 on the 1,000 test digits;
2. layer-wise sensitivity of that model (every layer quantized alone,
   weights + input, SNR at the logits) on calibration batches (training
   digits: the choice never looks at the test set);
3. the ``--budget`` most sensitive layers kept at 8 bit through
   ``qconfig_mapping.module_name`` (:func:`select_by_budget`), the mixed
   model calibrated the same way and tested; also, for reference, the
   same budget spent on the *least* sensitive layers and on the first/last
   layers (the papers' default).

Usage:
    python benchmarks/mixed_precision.py [--float-checkpoint PATH]
        [--budget 3] [--calib-steps 8] [--analysis-steps 2]
        [--write-config configs/.../ptq_academic_w4a4_mixed3_...py]
"""
import argparse
import copy
import os.path as osp
import sys
import time

import torch
from mmengine.config import Config

from mmrazor_quant.analysis import (
    layerwise_sensitivity,
    mixed_precision_rules,
    rank_layers,
    select_by_budget,
    write_mixed_precision_config,
)
from mmrazor_quant.analysis.build import (
    build_loader,
    build_quant_model,
    collect_batches,
    top1_accuracy,
)
from mmrazor_quant.analysis.report import data_loader_cfg
from mmrazor_quant.registry import register_all_modules

REPO = osp.dirname(osp.dirname(osp.abspath(__file__)))
CONFIG = ('configs/quantization/ptq/mixed/'
          'ptq_academic_w4a4_mobilenetv2_mnist.py')


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--config', default=CONFIG)
    parser.add_argument(
        '--float-checkpoint',
        default='work_dirs/analysis/fp32_mobilenetv2/float.pth')
    parser.add_argument('--budget', type=int, default=3)
    parser.add_argument('--calib-steps', type=int, default=8)
    parser.add_argument('--analysis-steps', type=int, default=2)
    parser.add_argument('--threads', type=int, default=1)
    parser.add_argument('--write-config', help='write the mixed config here')
    parser.add_argument(
        '--baselines', action='store_true',
        help='also spend the budget on the least sensitive and on the '
        'first/last layers')
    return parser.parse_args()


def with_rules(cfg: Config, rules) -> dict:
    model_cfg = copy.deepcopy(cfg.model)
    model_cfg.quantizer.qconfig_mapping = dict(module_name=list(rules))
    return model_cfg


def main() -> int:
    args = parse_args()
    torch.set_num_threads(args.threads)
    register_all_modules(init_default_scope=False)
    start = time.time()

    def log(msg):
        print(f'[{time.time() - start:6.0f} s] {msg}', flush=True)

    cfg = Config.fromfile(osp.join(REPO, args.config))
    build = dict(checkpoint=args.float_checkpoint,
                 calibrate_steps=args.calib_steps, show_progress=False)
    model = build_quant_model(cfg, **build)
    test = collect_batches(model, build_loader(cfg.test_dataloader), None)
    calib = collect_batches(model, build_loader(data_loader_cfg(cfg, 'calib')),
                            args.analysis_steps)
    from mmrazor_quant.models.fake_quants.utils import (
        disable_fake_quant,
        enable_fake_quant,
    )
    disable_fake_quant(model)
    fp32 = top1_accuracy(model, test)
    enable_fake_quant(model)
    w4a4 = top1_accuracy(model, test)
    log(f'fp32 {fp32:.2f}  W4A4 {w4a4:.2f}')
    sensitivity = layerwise_sensitivity(model, [x for x, _ in calib])
    ranked = rank_layers(sensitivity)
    snr = {r.name: r.snr for r in sensitivity}
    log('most sensitive: ' + ', '.join(
        f'{n} ({snr[n]:.1f} dB)' for n in ranked[:args.budget + 2]))
    runs = [('auto', select_by_budget(sensitivity, args.budget))]
    if args.baselines:
        runs += [('least sensitive',
                  mixed_precision_rules(ranked[-args.budget:])),
                 ('first+last', mixed_precision_rules(
                     [sensitivity[0].name, sensitivity[-1].name]))]
    results = [('fp32', [], fp32), ('W4A4', [], w4a4)]
    for label, rules in runs:
        mixed = build_quant_model(cfg, model_cfg=with_rules(cfg, rules),
                                  **build)
        top1 = top1_accuracy(mixed, test)
        results.append((label, [n for n, _ in rules], top1))
        log(f'{label}: {[n for n, _ in rules]} -> {top1:.2f}')
        if label == 'auto' and args.write_config:
            write_mixed_precision_config(
                osp.join(REPO, args.config), rules, args.write_config)
            log(f'wrote {args.write_config}')
    print('\n| model | layers at 8 bit | top-1 |\n|---|---|---|')
    for label, names, top1 in results:
        print(f'| {label} | {", ".join(names) or "-"} | {top1:.2f} |')
    return 0


if __name__ == '__main__':
    sys.exit(main())
