"""Shared fixtures: the example packages on sys.path, a narrow fp32
ResNet-18 briefly trained on MNIST digits, and a PTQ runner."""
import copy
import os.path as osp
import sys

import pytest
import torch
from mmengine.config import Config
from mmengine.runner import Runner

from mmrazor_quant.registry import MODELS, register_all_modules
from mmrazor_quant.utils import register_checkpoint_safe_globals
from ..train_utils import train_steps

ROOT = osp.dirname(osp.dirname(osp.dirname(osp.abspath(__file__))))
EXAMPLES = osp.join(ROOT, 'examples')
BACKEND_CONFIG = osp.join(EXAMPLES, 'custom_backend', 'configs',
                          'ptq_toy_npu_resnet18_mnist.py')
ALGORITHM_CONFIG = osp.join(EXAMPLES, 'custom_algorithm', 'configs',
                            'ptq_tqt_resnet18_mnist.py')

# The example packages are user code: importable from their folders, as a
# user would run them with PYTHONPATH=examples/custom_backend.
for sub in ('custom_backend', 'custom_algorithm'):
    path = osp.join(EXAMPLES, sub)
    if path not in sys.path:
        sys.path.insert(0, path)


@pytest.fixture(scope='session')
def float_checkpoint(tmp_path_factory):
    """The examples' narrow ResNet-18, 20 SGD steps on MNIST5k digits."""
    register_all_modules(init_default_scope=False)
    cfg = Config.fromfile(BACKEND_CONFIG)
    from mmrazor_quant.datasets import MNIST5k
    data = MNIST5k(split='train', pipeline=[])
    images = torch.stack([
        torch.as_tensor(data[i]['img'], dtype=torch.float32).reshape(
            1, 28, 28) for i in range(640)
    ])
    labels = torch.tensor([int(data[i]['gt_label']) for i in range(640)])
    images = (images - 33.32) / 78.57
    torch.manual_seed(0)
    arch = MODELS.build(copy.deepcopy(cfg.model.architecture))
    optim = torch.optim.SGD(arch.parameters(), lr=0.05, momentum=0.9)
    train_steps(arch, images, labels, 20, optim)
    path = tmp_path_factory.mktemp('fp32') / 'float.pth'
    torch.save(dict(state_dict=arch.state_dict()), str(path))
    return str(path)


def run_ptq(config: str, work_dir: str, float_checkpoint: str,
            **options) -> Runner:
    """``tools/ptq.py config`` in-process, on a subset of the test digits.
    """
    register_all_modules(init_default_scope=False)
    register_checkpoint_safe_globals()
    cfg = Config.fromfile(config)
    cfg.merge_from_dict({
        'model.float_checkpoint': float_checkpoint,
        'test_cfg.calibrate_steps': 4,
        'test_dataloader.dataset.indices': 256,
        **options
    })
    cfg.work_dir = work_dir
    cfg.launcher = 'none'
    cfg.log_level = 'WARNING'
    runner = Runner.from_cfg(cfg)
    runner.test()
    return runner


def example_batch(runner: Runner, n: int = 16) -> torch.Tensor:
    """``n`` preprocessed test digits."""
    loader = runner.test_dataloader
    batch = next(iter(loader))
    data = runner.model.data_preprocessor(batch, False)
    return data['inputs'][:n]
