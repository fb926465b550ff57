"""The command line that ``tools/train.py``, ``test.py`` and ``ptq.py`` share.

OpenMMLab's tools take the same arguments (a config, ``--work-dir``,
``--cfg-options``, ``--launcher``, ``--local-rank``) and apply them the same
way; each tool only adds its own (``--resume``, a checkpoint).
"""
import argparse
import os
import os.path as osp
from typing import Callable

from mmengine.config import Config, DictAction

__all__ = ['runner_arg_parser', 'parse_runner_args', 'apply_runner_args',
           'build_runner', 'run_and_teardown']


def runner_arg_parser(description: str,
                      config_help: str) -> argparse.ArgumentParser:
    """A parser with the arguments every Runner tool takes."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument('config', help=config_help)
    parser.add_argument('--work-dir', help='the dir to save logs and models')
    parser.add_argument(
        '--cfg-options',
        nargs='+',
        action=DictAction,
        help='override settings of the config, as key=value pairs; '
        'e.g. train_cfg.max_epochs=2 or key="[a,b]"')
    parser.add_argument(
        '--launcher',
        choices=['none', 'pytorch', 'slurm', 'mpi'],
        default='none',
        help='job launcher')
    # torchrun passes --local-rank (torch >= 2.0) or --local_rank.
    parser.add_argument('--local_rank', '--local-rank', type=int, default=0)
    return parser


def parse_runner_args(parser: argparse.ArgumentParser) -> argparse.Namespace:
    """Parse, and export ``LOCAL_RANK`` as torchrun would."""
    args = parser.parse_args()
    if 'LOCAL_RANK' not in os.environ:
        os.environ['LOCAL_RANK'] = str(args.local_rank)
    return args


def apply_runner_args(cfg: Config, args: argparse.Namespace) -> Config:
    """Apply the shared arguments on top of the config.

    The work dir defaults to ``./work_dirs/<config name>``, as in OpenMMLab.
    """
    cfg.launcher = args.launcher
    if args.cfg_options is not None:
        cfg.merge_from_dict(args.cfg_options)
    if args.work_dir is not None:
        cfg.work_dir = args.work_dir
    elif cfg.get('work_dir', None) is None:
        cfg.work_dir = osp.join('./work_dirs',
                                osp.splitext(osp.basename(args.config))[0])
    return cfg


def build_runner(args: argparse.Namespace,
                 merge_args: Callable[[Config, argparse.Namespace], Config]):
    """Load and check the config, then build mmengine's Runner.

    The config is checked (missing ``_base_`` files, unknown loop arguments)
    before the Runner creates the work dir, so a bad config leaves nothing
    behind.

    Args:
        args (Namespace): The parsed command line.
        merge_args (Callable): The tool's ``merge_args(cfg, args)``.
    """
    from mmengine.runner import Runner

    from mmrazor_quant.engine import setup_cpu_dist
    from mmrazor_quant.engine.runner.compile import check_compile_cfg
    from mmrazor_quant.registry import register_all_modules
    from .checkpoint import register_checkpoint_safe_globals
    from .config_checks import check_loop_cfgs, load_config

    register_all_modules(init_default_scope=False)
    # torch >= 2.6 loads with weights_only=True; allow mmengine's own types.
    register_checkpoint_safe_globals()
    cfg = merge_args(load_config(args.config), args)
    check_loop_cfgs(cfg)
    check_compile_cfg(cfg.get('compile'))
    setup_cpu_dist(cfg)
    return Runner.from_cfg(cfg)


def run_and_teardown(run: Callable[[], object]) -> None:
    """Run ``run()`` (``runner.train``/``runner.test``), then leave the
    process group cleanly on every rank (see
    :func:`mmrazor_quant.engine.teardown_dist`)."""
    from mmrazor_quant.engine import teardown_dist
    run()
    teardown_dist()
