"""Quantization error analysis of a config + checkpoint.

    python tools/analyze.py CONFIG CHECKPOINT [--method snr|cosine|mse]
        [--steps N] [--data calib|test] [--parts weight activation both]
        [--mixed-budget K [--mixed-bit 8|float] | --max-drop POINTS]
        [--work-dir DIR] [--cfg-options k=v ...]

CHECKPOINT is a quantized checkpoint (``model_ptq.pth`` from
``tools/ptq.py``, a QAT checkpoint) or a float one, which is then
calibrated as the config's PTQLoop would (on training data). Writes CSVs
and PNGs to the work dir (default ``work_dirs/analysis/<config>``) and, with
``--mixed-budget``/``--max-drop``, a config that keeps the most sensitive
layers at higher precision (see docs/analysis.md).
"""
import argparse
import os.path as osp

from mmengine.config import DictAction

from mmrazor_quant.analysis.layerwise import PARTS
from mmrazor_quant.analysis.metrics import METRICS
from mmrazor_quant.analysis.report import DATA_SPLITS, analyze
from mmrazor_quant.registry import register_all_modules
from mmrazor_quant.utils import load_config, register_checkpoint_safe_globals
from mmrazor_quant.utils.quiet import quiet_stack_warnings


def bit_or_float(value: str):
    return value if value == 'float' else int(value)


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description='Graph-wise / layer-wise quantization error analysis')
    parser.add_argument('config', help='quantization config file path')
    parser.add_argument(
        'checkpoint',
        nargs='?',
        help='quantized or float checkpoint (default: the config\'s '
        'float_checkpoint, calibrated)')
    parser.add_argument('--method', choices=sorted(METRICS), default='snr')
    parser.add_argument(
        '--steps', type=int, default=4, help='batches to analyze')
    parser.add_argument(
        '--data',
        choices=DATA_SPLITS,
        default='calib',
        help='calibration (training) or test batches; default calib')
    parser.add_argument(
        '--parts',
        nargs='+',
        choices=PARTS,
        default=['both'],
        help='what of a layer the layer-wise runs quantize')
    parser.add_argument(
        '--mixed-budget',
        type=int,
        help='write a config keeping this many layers at --mixed-bit')
    parser.add_argument(
        '--mixed-bit',
        type=bit_or_float,
        default=8,
        help='bits of the kept layers, or "float"; default 8')
    parser.add_argument(
        '--max-drop',
        type=float,
        help='keep layers until the top-1 drop is at most this (points)')
    parser.add_argument('--work-dir', help='where to write the results')
    parser.add_argument(
        '--cfg-options', nargs='+', action=DictAction,
        help='override settings of the config, as key=value pairs')
    return parser.parse_args()


def main() -> None:
    args = parse_args()
    quiet_stack_warnings()
    register_all_modules(init_default_scope=False)
    register_checkpoint_safe_globals()
    cfg = load_config(args.config)
    if args.cfg_options is not None:
        cfg.merge_from_dict(args.cfg_options)
    work_dir = args.work_dir or osp.join(
        'work_dirs', 'analysis',
        osp.splitext(osp.basename(args.config))[0])
    analyze(
        cfg,
        args.checkpoint,
        work_dir,
        method=args.method,
        steps=args.steps,
        data=args.data,
        parts=args.parts,
        mixed_budget=args.mixed_budget,
        mixed_bit=args.mixed_bit,
        max_drop=args.max_drop,
        config_path=args.config)


if __name__ == '__main__':
    main()
