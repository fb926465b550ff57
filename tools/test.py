"""Evaluate a checkpoint (fp32 or quantized) with the config's test loop."""
import argparse

from mmengine.config import Config

from mmrazor_quant.apis import (
    apply_runner_args,
    build_runner,
    parse_runner_args,
    run_and_teardown,
    runner_arg_parser,
)


def parse_args() -> argparse.Namespace:
    parser = runner_arg_parser('Test a checkpoint', 'test config file path')
    parser.add_argument('checkpoint', help='checkpoint file')
    return parse_runner_args(parser)


def merge_args(cfg: Config, args: argparse.Namespace) -> Config:
    """Apply the command line on top of the config."""
    cfg = apply_runner_args(cfg, args)
    cfg.load_from = args.checkpoint
    return cfg


def main() -> None:
    run_and_teardown(build_runner(parse_args(), merge_args).test)


if __name__ == '__main__':
    main()
