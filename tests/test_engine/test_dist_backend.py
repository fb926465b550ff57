"""The configs' process-group backend: NCCL for CUDA tensors on GPUs, gloo
for CPU tensors and on CPU-only machines, with no edit between the two."""
import os
import socket

import pytest
import torch
import torch.distributed as dist
from mmengine.config import Config

from mmrazor_quant.engine import setup_cpu_dist
from mmrazor_quant.engine.dist import cpu_backend

RUNTIME = os.path.join(
    os.path.dirname(__file__), '..', '..', 'configs', '_base_',
    'default_runtime.py')


def config_backend():
    return Config.fromfile(RUNTIME).env_cfg.dist_cfg.backend


def free_port():
    with socket.socket() as sock:
        sock.bind(('127.0.0.1', 0))
        return sock.getsockname()[1]


@pytest.mark.parametrize('backend, expected', [
    ('cpu:gloo,cuda:nccl', 'gloo'),
    ('cuda:nccl,cpu:gloo', 'gloo'),
    ('gloo', 'gloo'),
    ('nccl', 'nccl'),
    ('cuda:nccl', ''),
])
def test_cpu_backend(backend, expected):
    assert cpu_backend(backend) == expected


@pytest.mark.parametrize('backend', ['cpu:', 'cpu:gloo,cuda', 'a:b:c'])
def test_malformed_backend_names_the_key(backend):
    with pytest.raises(ValueError, match='env_cfg.dist_cfg.backend'):
        cpu_backend(backend)


def test_configs_map_cuda_to_nccl_and_cpu_to_gloo():
    backend = config_backend()
    pairs = dict(entry.split(':') for entry in backend.split(','))
    assert pairs == {'cpu': 'gloo', 'cuda': 'nccl'}


def test_cpu_launch_of_the_config_starts_gloo(monkeypatch):
    """One rank through the launcher path the tools take (torchrun's
    variables), without CUDA."""
    if torch.cuda.is_available() or dist.is_initialized():
        pytest.skip('the CPU-only path')
    for key, value in dict(RANK='0', LOCAL_RANK='0', WORLD_SIZE='1',
                           MASTER_ADDR='127.0.0.1',
                           MASTER_PORT=str(free_port())).items():
        monkeypatch.setenv(key, value)
    cfg = Config(dict(launcher='pytorch',
                      env_cfg=dict(dist_cfg=dict(backend=config_backend()))))
    assert setup_cpu_dist(cfg)
    try:
        assert dist.get_backend() == 'gloo'
        total = torch.tensor([2.5])
        dist.all_reduce(total)
        assert total.item() == 2.5
    finally:
        dist.destroy_process_group()


@pytest.mark.cuda
def test_gpu_launch_of_the_config_starts_nccl_and_gloo(monkeypatch):
    """mmengine's ``init_dist`` with the config's backend on a GPU machine:
    CUDA tensors are reduced over NCCL, CPU tensors over gloo."""
    from mmengine.dist import init_dist
    if dist.is_initialized():
        pytest.skip('a process group is already running')
    for key, value in dict(RANK='0', LOCAL_RANK='0', WORLD_SIZE='1',
                           MASTER_ADDR='127.0.0.1',
                           MASTER_PORT=str(free_port())).items():
        monkeypatch.setenv(key, value)
    init_dist('pytorch', backend=config_backend())
    try:
        group = dist.distributed_c10d._get_default_group()
        assert dist.get_backend(group) == config_backend()
        on_gpu, on_cpu = torch.ones(3, device='cuda'), torch.ones(3)
        dist.all_reduce(on_gpu)
        dist.all_reduce(on_cpu)
        assert on_gpu.sum().item() == on_cpu.sum().item() == 3
    finally:
        dist.destroy_process_group()
