"""The command line that ``tools/train.py``, ``test.py`` and ``ptq.py`` share.

OpenMMLab's tools take the same arguments (a config, ``--work-dir``,
``--cfg-options``, ``--launcher``, ``--local-rank``) and apply them the same
way; each tool only adds its own (``--resume``, a checkpoint).
"""
import argparse
import os
import os.path as osp
import re
from typing import Callable

from mmengine.config import Config, DictAction

__all__ = ['runner_arg_parser', 'parse_runner_args', 'apply_runner_args',
           'build_runner', 'check_work_dir_writable', 'run_and_teardown']


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
    from mmrazor_quant.utils.checkpoint import (
        read_checkpoint,
        register_checkpoint_safe_globals,
    )
    from mmrazor_quant.utils.codebase_imports import import_config_codebases
    from mmrazor_quant.utils.config_checks import check_loop_cfgs, load_config
    from mmrazor_quant.utils.data_pipeline import add_test_pipeline
    from mmrazor_quant.utils.quiet import (
        quiet_runner_logs,
        quiet_stack_warnings,
    )

    quiet_stack_warnings()
    register_all_modules(init_default_scope=False)
    # torch >= 2.6 loads with weights_only=True; allow mmengine's own types.
    register_checkpoint_safe_globals()
    cfg = add_test_pipeline(merge_args(load_config(args.config), args))
    # Again after the command line, which may name another codebase.
    import_config_codebases(cfg)
    check_loop_cfgs(cfg)
    if cfg.get('load_from') and osp.isfile(cfg.load_from):
        # Read once before the Runner exists: a bad file gets our message
        # and leaves no work dir behind.
        read_checkpoint(cfg.load_from, 'load_from')
    check_work_dir_writable(cfg.work_dir)
    check_compile_cfg(cfg.get('compile'))
    setup_cpu_dist(cfg)
    runner = _from_cfg_or_clean_up(Runner, cfg)
    quiet_runner_logs(runner)
    return runner


def _from_cfg_or_clean_up(runner_cls, cfg: Config):
    """``Runner.from_cfg``; if it fails (e.g. the model config does not
    validate), remove the timestamped log dir it created, and the work dir
    if it created that too, so the failure leaves nothing behind. The
    logger and visualizer it registered under its timestamped name are
    dropped too: a Runner built later in the same second (same name) would
    otherwise get them back, writing into the removed dir."""
    import shutil

    managers = _manager_classes()
    known = [set(m._instance_dict) for m in managers]
    work_dir = osp.abspath(cfg.work_dir)
    existed = osp.isdir(work_dir)
    before = set(os.listdir(work_dir)) if existed else set()
    try:
        return runner_cls.from_cfg(cfg)
    except Exception:
        for manager, names in zip(managers, known):
            for name in set(manager._instance_dict) - names:
                _close_handlers(manager._instance_dict.pop(name))
        if not existed:
            shutil.rmtree(work_dir, ignore_errors=True)
        elif osp.isdir(work_dir):
            for name in set(os.listdir(work_dir)) - before:
                if re.fullmatch(r'\d{8}_\d{6}', name):
                    shutil.rmtree(osp.join(work_dir, name),
                                  ignore_errors=True)
        raise


def _manager_classes() -> list:
    """mmengine's global-instance classes (``MMLogger``, ``MessageHub``,
    every ``Visualizer`` subclass: each keeps its own instance dict)."""
    from mmengine.utils import ManagerMixin
    found, todo = [], [ManagerMixin]
    while todo:
        cls = todo.pop()
        todo.extend(cls.__subclasses__())
        if '_instance_dict' in vars(cls):
            found.append(cls)
    return found


def _close_handlers(instance) -> None:
    """Close a dropped logger's file handlers (their dir is removed)."""
    for handler in list(getattr(instance, 'handlers', [])):
        handler.close()
        instance.removeHandler(handler)


def check_work_dir_writable(work_dir: str) -> None:
    """Refuse a work dir that cannot be created or written, before the
    Runner starts (it would fail with a bare ``OSError`` part-way).

    Raises:
        ValueError: Naming ``work_dir`` and the path in the way.
    """
    path = osp.abspath(work_dir)
    while not osp.exists(path):
        path = osp.dirname(path)
    if not osp.isdir(path):
        raise ValueError(f'--work-dir {work_dir!r} is not writable: '
                         f'{path!r} is a file, not a directory')
    if not os.access(path, os.W_OK | os.X_OK):
        raise ValueError(f'--work-dir {work_dir!r} is not writable: '
                         f'no write permission on {path!r}')


def run_and_teardown(run: Callable[[], object]) -> None:
    """Run ``run()`` (``runner.train``/``runner.test``), then leave the
    process group cleanly on every rank (see
    :func:`mmrazor_quant.engine.teardown_dist`).

    A distributed rank then exits at once: the DDP model still holds the
    gloo group, and destroying it during interpreter shutdown intermittently
    aborted a rank (``terminate called without an active exception``) after
    its run had finished and saved everything.
    """
    from mmrazor_quant.engine import teardown_dist
    run()
    if teardown_dist():
        _exit_after_flush()


def _exit_after_flush() -> None:
    """Close log files and flush the streams, then end the process without
    running interpreter teardown (``os._exit``)."""
    import logging
    import os
    import sys
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)
