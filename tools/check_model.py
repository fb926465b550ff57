"""Check that an mmcls model quantizes, trains a step and deploys.

    python tools/check_model.py CONFIG [--backend openvino|tensorrt]
        [--input-size 64] [--cfg-options model.backbone.img_size=64 ...]

CONFIG is an mmcls config (``mmcls::deit/deit-tiny_pt-4xb256_in1k.py`` or
a file). Random weights, random images: it checks capture, the QAT step,
QDQ export and onnxruntime parity, not accuracy (see docs/capture.md).
Exits 1 if a stage fails.
"""
import argparse
import json
import sys

from mmengine.config import DictAction

from mmrazor_quant.analysis.model_check import check_model, w8a8_backends
from mmrazor_quant.registry import register_all_modules
from mmrazor_quant.utils.quiet import quiet_stack_warnings


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description='Quantize / calibrate / predict / QAT step / export / '
        'parity check of a model with random weights')
    parser.add_argument('config', help='mmcls config (mmcls::... or a file)')
    parser.add_argument('--backend', choices=w8a8_backends(),
                        default='openvino')
    parser.add_argument('--input-size', type=int, nargs='+', default=[64],
                        help='H or H W of the random images')
    parser.add_argument('--cfg-options', nargs='+', action=DictAction,
                        default={}, help='overrides of the config, e.g. '
                        'model.backbone.img_size=64')
    return parser.parse_args()


def main() -> None:
    args = parse_args()
    quiet_stack_warnings()
    others = [k for k in args.cfg_options if not k.startswith('model.')]
    if others:
        sys.exit(f'--cfg-options: only model.* keys are used here, got '
                 f'{others}')
    register_all_modules()
    overrides = {k[len('model.'):]: v for k, v in args.cfg_options.items()
                 if k.startswith('model.')}
    nested: dict = {}
    for key, value in overrides.items():
        *path, leaf = key.split('.')
        node = nested
        for part in path:
            node = node.setdefault(part, {})
        node[leaf] = value
    size = args.input_size[0] if len(args.input_size) == 1 \
        else tuple(args.input_size)
    report = check_model(args.config, args.backend, size, nested or None)
    print(json.dumps(report.to_dict(), indent=2))
    sys.exit(0 if report.passed else 1)


if __name__ == '__main__':
    main()
