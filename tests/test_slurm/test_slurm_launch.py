"""PTQ and LSQ QAT launched by ``tools/slurm_train.sh`` on a real (local)
Slurm cluster end exactly where the same runs launched by torchrun
(``tools/dist_train.sh``) end: identical fake-quant scales and zero-points in
the saved checkpoints, and the same top-1. ``tools/slurm_test.sh`` then
evaluates the QAT checkpoint to that top-1.

Both launchers run 2 processes of a gloo group with one thread each and the
same seed, so ``DefaultSampler`` gives every rank the same shard. The MNIST
ResNet-18 is narrowed (8 channels), starts from its seeded initialisation
and sees 512 training and 300 test digits, so that the module takes about
two minutes on 2 cores.
"""
import glob
import os
import os.path as osp
import re
import shutil
import socket
import subprocess
import sys
import tempfile

import pytest
import torch

from ..train_utils import train_steps

REPO = osp.dirname(osp.dirname(osp.dirname(osp.abspath(__file__))))
PTQ_CFG = 'configs/quantization/ptq/ptq_openvino_resnet18_mnist.py'
LSQ_CFG = 'configs/quantization/qat/lsq/lsq_openvino_resnet18_mnist.py'
NPROC = 2
RUN_TIMEOUT = 300

# ResNet_CIFAR-18 at 8 channels (head sees 8 * 8 = 64 features).
NARROW = ['backbone.stem_channels=8', 'backbone.base_channels=8',
          'head.in_channels=64']
TRAIN_DIGITS = 'train_dataloader.dataset.indices=512'
# 300 of the 1,000 test digits (the split is shuffled, all classes occur).
TEST_DIGITS = ['val_dataloader.dataset.indices=300',
               'test_dataloader.dataset.indices=300']


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        return s.getsockname()[1]


def _env(**extra) -> dict:
    env = dict(os.environ, OMP_NUM_THREADS='1', MKL_NUM_THREADS='1',
               PYTHONHASHSEED='0', **extra)
    # `python`, `torchrun` on the tasks' PATH are those of this interpreter.
    env['PATH'] = osp.dirname(sys.executable) + os.pathsep + env['PATH']
    env.pop('PYTHONPATH', None)
    return env


def _run(cmd, env, what):
    proc = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True,
                          text=True, timeout=RUN_TIMEOUT)
    if proc.returncode != 0:
        pytest.fail(f'{what} exited with {proc.returncode}:\n'
                    f'{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}')
    return proc


def _top1(work_dir: str, key: str = 'accuracy/top1') -> str:
    """The last ``key`` logged in ``work_dir`` (rank 0's log), as printed.
    ``QATValLoop`` logs ``qat.accuracy/top1`` and ``original.…``."""
    logs = sorted(glob.glob(osp.join(work_dir, '*', '*.log')))
    assert logs, f'no log in {work_dir}'
    found = re.findall(rf'(?<![\w.]){re.escape(key)}: ([0-9.]+)',
                       open(logs[-1]).read())
    assert found, f'no {key} in {logs[-1]}'
    return found[-1]


def _qparams(checkpoint: str) -> dict:
    state = torch.load(checkpoint, map_location='cpu',
                       weights_only=False)['state_dict']
    qparams = {k: v for k, v in state.items()
               if k.endswith(('.scale', '.zero_point'))}
    assert qparams, f'no fake-quant scale/zero_point in {checkpoint}'
    return qparams


def _assert_same_qparams(a: str, b: str) -> None:
    qa, qb = _qparams(a), _qparams(b)
    assert qa.keys() == qb.keys()
    differ = [k for k in qa if not torch.equal(qa[k], qb[k])]
    assert not differ, f'{len(differ)}/{len(qa)} qparams differ: {differ[:5]}'


@pytest.fixture(scope='module')
def work_dir():
    path = tempfile.mkdtemp(prefix='mmrq_slurm_runs_')
    yield path
    shutil.rmtree(path, ignore_errors=True)


def _train_narrow_float(path: str, steps: int = 120) -> float:
    """AdamW on the 512 training digits the runs calibrate on; writes the
    float checkpoint and returns its top-1 on the 300 test digits."""
    from mmengine.config import Config

    from mmrazor_quant.datasets.mnist5k import (
        find_mnist5k_file,
        load_mnist5k_arrays,
        split_mnist5k_indices,
    )
    from mmrazor_quant.registry import MODELS, register_all_modules
    register_all_modules(init_default_scope=False)
    cfg = Config.fromfile(osp.join(REPO, LSQ_CFG))
    cfg.merge_from_dict({f'model.architecture.{k}': int(v) for k, v in
                         (o.split('=') for o in NARROW)})
    images, labels = load_mnist5k_arrays(find_mnist5k_file())
    mean, std = cfg.model.data_preprocessor.mean[0], \
        cfg.model.data_preprocessor.std[0]

    def split(name, n):
        idx = split_mnist5k_indices(labels, name)[:n]
        x = (torch.from_numpy(images[idx]).float()[:, None] - mean) / std
        return x, torch.from_numpy(labels[idx])

    (x, y), (tx, ty) = split('train', 512), split('test', 300)
    torch.manual_seed(0)
    model = MODELS.build(cfg.model.architecture)
    train_steps(model, x, y, steps,
                torch.optim.AdamW(model.parameters(), lr=3e-3))
    model.eval()
    with torch.no_grad():
        top1 = float((model(tx, mode='tensor').argmax(1) == ty).float()
                     .mean()) * 100
    torch.save({'state_dict': model.state_dict()}, path)
    return top1


@pytest.fixture(scope='module')
def float_checkpoint(work_dir):
    """A narrow ResNet trained for a few seconds, so that top-1 compares
    real predictions, not the chance level of random weights."""
    path = osp.join(work_dir, 'float.pth')
    top1 = _train_narrow_float(path)
    assert top1 > 80, top1
    return path, top1


def _quant_options(float_checkpoint):
    # The same trained float weights in every process of both launchers.
    return [
        *[f'model.architecture.{o}' for o in NARROW],
        f'model.float_checkpoint={float_checkpoint[0]}', TRAIN_DIGITS,
        *TEST_DIGITS, 'randomness.seed=0', 'default_hooks.logger.interval=100'
    ]


class Launchers:
    """The same tool, config and options through slurm and through torchrun
    (``dist_train.sh``, or torchrun itself for ``ptq.py``)."""

    def __init__(self, cluster):
        self.cluster = cluster

    def slurm(self, script, name, args, tool='train'):
        env = self.cluster.env.copy()
        env.update(_env(SLURM_CONF=self.cluster.conf,
                        MASTER_PORT=str(_free_port()), GPUS=str(NPROC),
                        GPUS_PER_NODE=str(NPROC), CPUS_PER_TASK='1',
                        GRES='none', TOOL=tool, PYTHON=sys.executable))
        env['PATH'] += os.pathsep + self.cluster.env['PATH']
        return _run(['bash', f'tools/{script}', self.cluster.partition,
                     f'mmrq_{name}', *args], env, f'{script} {name}')

    def torchrun(self, tool, name, args):
        # tools/dist_train.sh, with the tool as a parameter (it is fixed to
        # train.py there; PTQ goes through ptq.py).
        env = _env(PYTHONPATH=REPO)
        return _run([
            sys.executable, '-m', 'torch.distributed.run', '--nnodes=1',
            '--node_rank=0', '--master_addr=127.0.0.1',
            f'--nproc_per_node={NPROC}', f'--master_port={_free_port()}',
            f'tools/{tool}.py', *args, '--launcher', 'pytorch'
        ], env, f'torchrun {tool} {name}')

    def dist_script(self, script, name, args):
        env = _env(PORT=str(_free_port()))
        return _run(['bash', f'tools/{script}', *args], env,
                    f'{script} {name}')


@pytest.fixture(scope='module')
def launch(slurm_cluster):
    return Launchers(slurm_cluster)


def test_cluster_runs_two_tasks(slurm_cluster):
    out = slurm_cluster.run(['srun', '-N1', '-n2', 'hostname']).stdout
    assert len(out.split()) == 2, out


def test_ptq_slurm_equals_torchrun(launch, work_dir, float_checkpoint):
    options = ['--cfg-options', *_quant_options(float_checkpoint),
               'test_cfg.calibrate_steps=2',
               'test_cfg.calibrate_dataloader.dataset.indices=256']
    slurm_dir = osp.join(work_dir, 'ptq_slurm')
    dist_dir = osp.join(work_dir, 'ptq_dist')
    launch.slurm('slurm_train.sh', 'ptq', [PTQ_CFG, slurm_dir, *options],
                 tool='ptq')
    launch.torchrun('ptq', 'ptq', [PTQ_CFG, '--work-dir', dist_dir,
                                   *options])
    _assert_same_qparams(
        osp.join(slurm_dir, 'model_ptq.pth'),
        osp.join(dist_dir, 'model_ptq.pth'))
    assert _top1(slurm_dir) == _top1(dist_dir)
    # W8A8 PTQ of the trained float model: at most 3 of 300 digits lost.
    assert float(_top1(slurm_dir)) >= float_checkpoint[1] - 1.0


def test_lsq_qat_slurm_equals_dist_train(launch, work_dir,
                                        float_checkpoint):
    options = ['--cfg-options', *_quant_options(float_checkpoint)]
    slurm_dir = osp.join(work_dir, 'lsq_slurm')
    dist_dir = osp.join(work_dir, 'lsq_dist')
    launch.slurm('slurm_train.sh', 'lsq', [LSQ_CFG, slurm_dir, *options])
    launch.dist_script('dist_train.sh', 'lsq', [
        LSQ_CFG, str(NPROC), '--work-dir', dist_dir, *options])
    checkpoint = osp.join(slurm_dir, 'epoch_1.pth')
    _assert_same_qparams(checkpoint, osp.join(dist_dir, 'epoch_1.pth'))
    top1 = _top1(slurm_dir, 'qat.accuracy/top1')
    assert top1 == _top1(dist_dir, 'qat.accuracy/top1')
    # One LSQ epoch from the trained float weights keeps them useful.
    assert float(top1) >= float_checkpoint[1] - 5.0

    # slurm_test.sh evaluates the QAT checkpoint to the top-1 of the
    # validation at the end of training.
    test_dir = osp.join(work_dir, 'lsq_slurm_test')
    launch.slurm('slurm_test.sh', 'lsq_test', [
        LSQ_CFG, checkpoint, '--work-dir', test_dir, *options])
    assert _top1(test_dir) == top1
