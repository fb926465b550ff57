"""PTQ on two gloo ranks (launcher 'pytorch' on CPU, DDP wrapper): every
rank calibrates on its own shard of the training data and ends with the
qparams of one process calibrating on the union."""
import os
import os.path as osp
import socket
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from mmengine.runner import Runner

from mmrazor_quant.engine import setup_cpu_dist
from mmrazor_quant.models.fake_quants.utils import named_fake_quants
from mmrazor_quant.registry import register_all_modules
from .toy import loader, runner_cfg, tiny_net_registered

WORLD_SIZE = 2
# 64 training digits in batches of 16: each rank's shard is 2 batches, the
# union 4 (DefaultSampler without shuffling gives rank r samples r, r+2, ..).
CALIB_DIGITS, BATCH, STEPS_PER_RANK = 64, 16, 2


def ptq_cfg(work_dir, steps, **extra):
    cfg = runner_cfg(
        work_dir,
        test_cfg=dict(type='mmrazor_quant.PTQLoop', calibrate_steps=steps),
        **extra)
    cfg.train_dataloader = loader('train', CALIB_DIGITS, batch_size=BATCH)
    return cfg


def qparams(runner):
    model = getattr(runner.model, 'module', runner.model)
    return {
        name: [fq.scale.detach().clone(), fq.zero_point.clone(),
               fq.observer.min_val.clone(), fq.observer.max_val.clone()]
        for name, fq in named_fake_quants(model)
    }


def run_ptq(cfg):
    register_all_modules(init_default_scope=False)
    with tiny_net_registered():
        runner = Runner.from_cfg(cfg)
        metrics = runner.test()
        return runner, dict(qparams=qparams(runner), metrics=metrics)


def worker(rank, port, work_dir):
    os.environ.update(RANK=str(rank), LOCAL_RANK=str(rank),
                      WORLD_SIZE=str(WORLD_SIZE), MASTER_ADDR='127.0.0.1',
                      MASTER_PORT=str(port))
    torch.set_num_threads(1)
    cfg = ptq_cfg(
        work_dir, STEPS_PER_RANK, launcher='pytorch',
        model_wrapper_cfg=dict(type='mmrazor_quant.MMArchitectureQuantDDP'))
    assert setup_cpu_dist(cfg)  # mmengine's init_dist needs CUDA
    try:
        runner, result = run_ptq(cfg)
        assert type(runner.model).__name__ == 'MMArchitectureQuantDDP'
        assert runner.world_size == WORLD_SIZE
        torch.save(result, osp.join(work_dir, f'rank{rank}.pt'))
    finally:
        # No rank may tear gloo down while the other is still in a
        # collective (that aborted rank 0 with SIGABRT once).
        dist.barrier()
        dist.destroy_process_group()


def free_port():
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        return s.getsockname()[1]


def spawn(work_dir, timeout=240):
    context = mp.start_processes(
        worker, args=(free_port(), work_dir), nprocs=WORLD_SIZE, join=False,
        start_method='spawn')
    deadline = time.time() + timeout
    while not context.join(timeout=5):
        if time.time() > deadline:
            for process in context.processes:
                process.terminate()
            raise TimeoutError(f'ranks did not finish in {timeout} s')


def test_two_ranks_match_one_process_on_the_union(tmp_path):
    dist_dir = str(tmp_path / 'dist')
    os.makedirs(dist_dir)
    spawn(dist_dir)
    assert osp.isfile(osp.join(dist_dir, 'model_ptq.pth'))
    ranks = [torch.load(osp.join(dist_dir, f'rank{r}.pt'))
             for r in range(WORLD_SIZE)]

    _, single = run_ptq(ptq_cfg(str(tmp_path / 'single'),
                                WORLD_SIZE * STEPS_PER_RANK))
    assert set(ranks[0]['qparams']) == set(single['qparams'])
    assert len(single['qparams']) >= 6
    for name, expected in single['qparams'].items():
        for rank in ranks:
            # Ranks hold bit-identical qparams (all-reduced statistics) ...
            for a, b in zip(rank['qparams'][name], ranks[0]['qparams'][name]):
                torch.testing.assert_close(a, b, rtol=0, atol=0)
            # ... equal to one process seeing all 64 digits (up to conv
            # rounding at another batch size).
            for a, b in zip(rank['qparams'][name], expected):
                torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6,
                                           msg=name)
    # The test set is sharded too; collected metrics match.
    assert ranks[0]['metrics'] == ranks[1]['metrics'] == single['metrics']
