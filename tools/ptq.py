"""Post-training quantization: calibrate, save model_ptq.pth, evaluate.

The config's ``test_cfg`` is a ``PTQLoop``; float weights come from the
model's ``float_checkpoint``. ``--checkpoint`` loads a quantized checkpoint
(e.g. a ``model_ptq.pth``, with ``test_cfg.only_val=True`` to only
evaluate it). ``--export`` then writes the ONNX ``model.deploy_cfg``
describes into the work dir and checks it against the simulation, as
``tools/export.py`` does.
"""
import argparse

from mmengine.config import Config

from mmrazor_quant.apis import (
    apply_runner_args,
    build_runner,
    parse_runner_args,
    run_and_teardown,
    runner_arg_parser,
)
from mmrazor_quant.backends import backend_names


def parse_args() -> argparse.Namespace:
    parser = runner_arg_parser('Post-training quantization',
                               'PTQ config file path')
    parser.add_argument(
        '--checkpoint', help='quantized checkpoint to load (load_from)')
    parser.add_argument(
        '--export',
        nargs='?',
        const='deploy_cfg',
        metavar='BACKEND',
        help='after calibration, export as model.deploy_cfg says (or for '
        'BACKEND: ' + ', '.join(backend_names(deployable=True)) + ' or one '
        "the config's custom_imports registers) and check parity")
    parser.add_argument('--num-samples', type=int, default=256,
                        help='test samples for the export parity check')
    return parse_runner_args(parser)


def merge_args(cfg: Config, args: argparse.Namespace) -> Config:
    """Apply the command line on top of the config."""
    cfg = apply_runner_args(cfg, args)
    if args.checkpoint is not None:
        cfg.load_from = args.checkpoint
    if args.export is not None:
        from mmrazor_quant.deploy.config_export import check_exportable
        # Before the Runner starts: a bad deploy_cfg leaves no work dir.
        check_exportable(cfg, _export_backend(args))
    return cfg


def _export_backend(args: argparse.Namespace):
    return None if args.export == 'deploy_cfg' else args.export


def main() -> None:
    args = parse_args()
    runner = build_runner(args, merge_args)

    def run() -> None:
        runner.test()
        if args.export is not None:
            from mmrazor_quant.deploy.config_export import export_runner_model
            export_runner_model(runner, args.config, _export_backend(args),
                                args.num_samples)

    run_and_teardown(run)


if __name__ == '__main__':
    main()
