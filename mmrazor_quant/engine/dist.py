"""Start ``torch.distributed`` on machines without CUDA.

mmengine 0.10.7's ``init_dist`` calls ``torch.cuda.set_device`` for the
``pytorch`` and ``slurm`` launchers, which fails on a CPU-only torch (and
``slurm`` divides by the GPU count). :func:`setup_cpu_dist` starts the gloo
process group itself in that case; the Runner then finds it initialised and
skips ``init_dist``. With CUDA it does nothing and mmengine proceeds as
usual.
"""
import datetime
import os
import subprocess
from typing import Optional

import torch
import torch.distributed as torch_dist
from mmengine.logging import print_log

__all__ = ['setup_cpu_dist', 'teardown_dist']

_LAUNCHERS = ('none', 'pytorch', 'slurm', 'mpi')


def setup_cpu_dist(cfg) -> bool:
    """Initialise a gloo process group for ``cfg.launcher`` without CUDA.

    Reads ``cfg.launcher`` and ``cfg.env_cfg.dist_cfg`` (``backend``,
    ``timeout`` in seconds, ``port`` for slurm). A backend other than gloo
    is replaced by gloo with a warning: NCCL needs GPUs.

    Args:
        cfg (Config | dict): The runner config, after the command line.

    Returns:
        bool: True if this call started the process group.

    Raises:
        ValueError: If ``cfg.launcher`` is unknown, or is ``mpi`` without
            CUDA (not supported here).
    """
    launcher = cfg.get('launcher', 'none') or 'none'
    if launcher not in _LAUNCHERS:
        raise ValueError(f'`launcher` must be one of {_LAUNCHERS}, got '
                         f'{launcher!r}')
    if (launcher == 'none' or torch.cuda.is_available()
            or torch_dist.is_initialized()):
        return False
    if launcher == 'mpi':
        raise ValueError('`launcher`=mpi without CUDA is not supported; use '
                         'pytorch (torchrun) or slurm')
    dist_cfg = dict((cfg.get('env_cfg') or {}).get('dist_cfg') or {})
    if launcher == 'slurm':
        _export_slurm_env(dist_cfg.get('port'))
    backend = dist_cfg.get('backend', 'gloo')
    if backend != 'gloo':
        print_log(f'env_cfg.dist_cfg.backend={backend!r} needs CUDA; using '
                  'gloo on this CPU-only machine', logger='current')
    kwargs = {}
    if dist_cfg.get('timeout') is not None:
        kwargs['timeout'] = datetime.timedelta(seconds=dist_cfg['timeout'])
    torch_dist.init_process_group(backend='gloo', init_method='env://',
                                  **kwargs)
    return True


def teardown_dist() -> bool:
    """Wait for every rank, then destroy the process group, if any.

    Without it each rank leaves the gloo group to interpreter shutdown; a
    rank that exits while another still talks to it can abort with
    ``terminate called without an active exception`` (SIGABRT), failing a
    run whose training had finished.

    Returns:
        bool: Whether there was a process group to destroy.
    """
    if not torch_dist.is_available() or not torch_dist.is_initialized():
        return False
    torch_dist.barrier()
    torch_dist.destroy_process_group()
    return True


def _export_slurm_env(port: Optional[int]) -> None:
    """Translate slurm's variables into those of ``env://``, as mmengine's
    slurm launcher does (the first node of the job is the master)."""
    proc_id = int(os.environ['SLURM_PROCID'])
    ntasks = int(os.environ['SLURM_NTASKS'])
    local_id = os.environ.get('SLURM_LOCALID', '0')
    if port is not None:
        os.environ['MASTER_PORT'] = str(port)
    os.environ.setdefault('MASTER_PORT', '29500')
    if 'MASTER_ADDR' not in os.environ:
        node_list = os.environ['SLURM_NODELIST']
        os.environ['MASTER_ADDR'] = subprocess.getoutput(
            f'scontrol show hostname {node_list} | head -n1')
    os.environ['WORLD_SIZE'] = str(ntasks)
    os.environ['LOCAL_RANK'] = local_id
    os.environ['RANK'] = str(proc_id)
