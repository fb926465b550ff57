"""Train a model (fp32, or QAT through a quantization config) from a config."""
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
    parser = runner_arg_parser('Train a model', 'train config file path')
    parser.add_argument(
        '--resume',
        nargs='?',
        type=str,
        const='auto',
        help='resume from the given checkpoint; without a path, from the '
        'latest checkpoint in the work dir')
    return parse_runner_args(parser)


def merge_args(cfg: Config, args: argparse.Namespace) -> Config:
    """Apply the command line on top of the config."""
    cfg = apply_runner_args(cfg, args)
    if args.resume == 'auto':
        cfg.resume = True
        cfg.load_from = None
    elif args.resume is not None:
        cfg.resume = True
        cfg.load_from = args.resume
    return cfg


def check_resume_checkpoint(runner, path: str) -> None:
    """Refuse to resume from a checkpoint of another model.

    mmengine would load the matching keys, warn about the rest and go on
    training a partly random model (or fail later on the optimizer).
    """
    from mmrazor_quant.utils.checkpoint import read_checkpoint
    from mmrazor_quant.utils.state_dict_check import (
        check_state_dict_matches,
        strip_wrapper_prefix,
    )
    model = getattr(runner.model, 'module', runner.model)
    checkpoint = read_checkpoint(path, '--resume checkpoint')
    state_dict = strip_wrapper_prefix(checkpoint.get('state_dict', {}))
    # Observers size their statistics on loading: compare keys only.
    check_state_dict_matches(
        model, state_dict, f'--resume checkpoint {path!r}',
        compare_shapes=False)


def main() -> None:
    args = parse_args()
    runner = build_runner(args, merge_args)
    if args.resume not in (None, 'auto'):
        check_resume_checkpoint(runner, args.resume)
    run_and_teardown(runner.train)


if __name__ == '__main__':
    main()
