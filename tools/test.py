"""Evaluate a checkpoint (fp32 or quantized) with the config's test loop."""
import argparse
import os
import os.path as osp

from mmengine.config import Config, DictAction
from mmengine.runner import Runner

from mmrazor_quant.engine import setup_cpu_dist
from mmrazor_quant.registry import register_all_modules
from mmrazor_quant.utils import register_checkpoint_safe_globals


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description='Test a checkpoint')
    parser.add_argument('config', help='test config file path')
    parser.add_argument('checkpoint', help='checkpoint file')
    parser.add_argument('--work-dir', help='the dir to save logs and results')
    parser.add_argument(
        '--cfg-options',
        nargs='+',
        action=DictAction,
        help='override settings of the config, as key=value pairs')
    parser.add_argument(
        '--launcher',
        choices=['none', 'pytorch', 'slurm', 'mpi'],
        default='none',
        help='job launcher')
    parser.add_argument('--local_rank', '--local-rank', type=int, default=0)
    args = parser.parse_args()
    if 'LOCAL_RANK' not in os.environ:
        os.environ['LOCAL_RANK'] = str(args.local_rank)
    return args


def merge_args(cfg: Config, args: argparse.Namespace) -> Config:
    """Apply the command line on top of the config."""
    cfg.launcher = args.launcher
    if args.cfg_options is not None:
        cfg.merge_from_dict(args.cfg_options)
    if args.work_dir is not None:
        cfg.work_dir = args.work_dir
    elif cfg.get('work_dir', None) is None:
        cfg.work_dir = osp.join('./work_dirs',
                                osp.splitext(osp.basename(args.config))[0])
    cfg.load_from = args.checkpoint
    return cfg


def main() -> None:
    args = parse_args()
    register_all_modules(init_default_scope=False)
    # torch >= 2.6 loads with weights_only=True; allow mmengine's own types.
    register_checkpoint_safe_globals()
    cfg = merge_args(Config.fromfile(args.config), args)
    setup_cpu_dist(cfg)
    runner = Runner.from_cfg(cfg)
    runner.test()


if __name__ == '__main__':
    main()
