"""Two ranks observing different data end with the qparams of one process
observing the union: over gloo with CPU tensors, and over NCCL with each
rank's tensors on its own GPU (the configs' ``'cpu:gloo,cuda:nccl'``)."""
import os
import socket

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from mmrazor_quant.models.observers import (
    HistogramObserver,
    KLObserver,
    LSQObserver,
    LSQPlusObserver,
    MinMaxObserver,
    MovingAverageMinMaxObserver,
    MSEObserver,
    PerChannelMinMaxObserver,
)
from mmrazor_quant.structures.quantization import QSchema

WORLD_SIZE, STEPS = 2, 2


def build_observers():
    sym = dict(qdtype='qint8', is_symmetry=True)
    return {
        'minmax': MinMaxObserver(QSchema()),
        'moving_average': MovingAverageMinMaxObserver(QSchema(), 0.5),
        'per_channel': PerChannelMinMaxObserver(QSchema(**sym, ch_axis=1)),
        'histogram': HistogramObserver(QSchema(), bins=256, percentile=99.),
        'kl': KLObserver(QSchema(**sym), bins=256),
        'mse': MSEObserver(QSchema(**sym, bit=4), num_candidates=50),
        'lsq': LSQObserver(QSchema(**sym)),
        'lsq_plus': LSQPlusObserver(QSchema()),
    }


def batch(rank, step):
    """Different scale, shift and size on each rank and step."""
    gen = torch.Generator().manual_seed(100 * rank + step)
    x = torch.randn(3 + rank, 4, 5, generator=gen) * (1 + rank + step)
    return x + 0.5 * rank - 0.25 * step


def observe(observers, batches, device='cpu'):
    for x in batches:
        for obs in observers.values():
            obs.to(device)(x.to(device))
    return {
        k: tuple(t.cpu() for t in obs.calculate_qparams())
        for k, obs in observers.items()
    }


def worker(rank, port, out_dir, backend):
    torch.set_num_threads(1)
    device = 'cpu'
    if 'nccl' in backend:
        torch.cuda.set_device(rank)
        device = f'cuda:{rank}'
    dist.init_process_group(backend, init_method=f'tcp://127.0.0.1:{port}',
                            rank=rank, world_size=WORLD_SIZE)
    try:
        results = observe(build_observers(),
                          [batch(rank, step) for step in range(STEPS)],
                          device)
        torch.save(results, os.path.join(out_dir, f'rank{rank}.pt'))
    finally:
        dist.barrier()  # never tear gloo down under the other rank
        dist.destroy_process_group()


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(('127.0.0.1', 0))
        return sock.getsockname()[1]


def _two_gpus():
    return torch.cuda.is_available() and torch.cuda.device_count() >= 2


@pytest.mark.timeout(120)
@pytest.mark.parametrize('backend', [
    'gloo',
    pytest.param(
        'cpu:gloo,cuda:nccl',
        marks=[
            pytest.mark.cuda,
            pytest.mark.skipif(not _two_gpus(), reason='NCCL needs 2 GPUs')
        ])
])
def test_ranks_agree_with_single_process_on_union(tmp_path, backend):
    if not dist.is_available():
        pytest.skip('torch.distributed is not available')
    mp.spawn(worker, args=(free_port(), str(tmp_path), backend),
             nprocs=WORLD_SIZE, join=True)
    ranks = [torch.load(tmp_path / f'rank{r}.pt') for r in range(WORLD_SIZE)]
    union = observe(build_observers(), [
        torch.cat([batch(r, step) for r in range(WORLD_SIZE)])
        for step in range(STEPS)
    ])
    for name, (scale, zero_point) in union.items():
        for rank in ranks:
            # identical across ranks ...
            assert torch.equal(rank[name][0], ranks[0][name][0]), name
            assert torch.equal(rank[name][1], ranks[0][name][1]), name
            # ... and equal to one process observing the union
            torch.testing.assert_close(rank[name][0], scale, rtol=1e-6,
                                       atol=0, msg=name)
            assert torch.equal(rank[name][1], zero_point), name
    # the ranks' data differ, so a rank on its own would disagree
    alone = observe(build_observers(), [batch(0, s) for s in range(STEPS)])
    assert not torch.equal(alone['minmax'][0], union['minmax'][0])
    assert not torch.equal(alone['lsq'][0], union['lsq'][0])
