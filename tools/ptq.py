"""Post-training quantization: calibrate, save model_ptq.pth, evaluate.

The config's ``test_cfg`` is a ``PTQLoop``; float weights come from the
model's ``float_checkpoint``. ``--checkpoint`` loads a quantized checkpoint
(e.g. a ``model_ptq.pth``, with ``test_cfg.only_val=True`` to only
evaluate it).
"""
import argparse

from mmengine.config import Config

from mmrazor_quant.utils.runner_cli import (apply_runner_args, build_runner,
                                            parse_runner_args,
                                            run_and_teardown,
                                            runner_arg_parser)


def parse_args() -> argparse.Namespace:
    parser = runner_arg_parser('Post-training quantization',
                               'PTQ config file path')
    parser.add_argument(
        '--checkpoint', help='quantized checkpoint to load (load_from)')
    return parse_runner_args(parser)


def merge_args(cfg: Config, args: argparse.Namespace) -> Config:
    """Apply the command line on top of the config."""
    cfg = apply_runner_args(cfg, args)
    if args.checkpoint is not None:
        cfg.load_from = args.checkpoint
    return cfg


def main() -> None:
    run_and_teardown(build_runner(parse_args(), merge_args).test)


if __name__ == '__main__':
    main()
