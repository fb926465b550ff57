"""Start ``torch.distributed`` on machines without CUDA.

mmengine 0.10.7's ``init_dist`` calls ``torch.cuda.set_device`` for the
``pytorch`` and ``slurm`` launchers, which fails on a CPU-only torch (and
``slurm`` divides by the GPU count). :func:`setup_cpu_dist` starts the gloo
process group itself in that case; the Runner then finds it initialised and
skips ``init_dist``. With CUDA it does nothing and mmengine proceeds as
usual.

The configs ask for ``backend='cpu:gloo,cuda:nccl'`` (torch's device-mapped
form): on GPUs, mmengine passes it to ``init_process_group``, CUDA tensors
(DDP gradients, the observers' all-reduces) go over NCCL and CPU tensors over
gloo; here the ``cpu`` entry is taken. No config is edited to move between
the two.
"""
import datetime
import os
import subprocess
from typing import Optional

import torch
import torch.distributed as torch_dist
from mmengine.logging import print_log

__all__ = ['cpu_backend', 'setup_cpu_dist', 'teardown_dist']

_LAUNCHERS = ('none', 'pytorch', 'slurm', 'mpi')


def setup_cpu_dist(cfg) -> bool:
    """Initialise a gloo process group for ``cfg.launcher`` without CUDA.

    Reads ``cfg.launcher`` and ``cfg.env_cfg.dist_cfg`` (``backend``,
    ``timeout`` in seconds, ``port`` for slurm). A device-mapped backend
    (``'cpu:gloo,cuda:nccl'``) gives its ``cpu`` entry; a backend without a
    gloo entry for CPU (``'nccl'``) is replaced by gloo with a message:
    NCCL needs GPUs.

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
    if cpu_backend(backend) != 'gloo':
        print_log(f'env_cfg.dist_cfg.backend={backend!r} needs CUDA; using '
                  'gloo on this CPU-only machine', logger='current')
    kwargs = {}
    if dist_cfg.get('timeout') is not None:
        kwargs['timeout'] = datetime.timedelta(seconds=dist_cfg['timeout'])
    torch_dist.init_process_group(backend='gloo', init_method='env://',
                                  **kwargs)
    return True


def cpu_backend(backend: str) -> str:
    """The backend ``backend`` uses for CPU tensors.

    Examples:
        >>> cpu_backend('cpu:gloo,cuda:nccl')
        'gloo'
        >>> cpu_backend('nccl')
        'nccl'

    Args:
        backend (str): ``env_cfg.dist_cfg.backend``: one backend name, or
            torch's ``device:backend`` pairs separated by commas.

    Returns:
        str: The entry for ``cpu`` of a device-mapped string, else
        ``backend`` itself.

    Raises:
        ValueError: If a device-mapped string is malformed.
    """
    if ':' not in backend:
        return backend
    pairs = [entry.split(':') for entry in backend.split(',')]
    if any(len(pair) != 2 or not all(pair) for pair in pairs):
        raise ValueError('env_cfg.dist_cfg.backend must be a backend name or '
                         "'device:backend' pairs such as "
                         f"'cpu:gloo,cuda:nccl', got {backend!r}")
    return dict(pairs).get('cpu', '')


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
