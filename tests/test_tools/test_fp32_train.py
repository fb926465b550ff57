"""fp32 training through the real Runner: resume, test tool, safe loading."""
import io
import os.path as osp
import runpy
import sys
from pickle import UnpicklingError

import numpy as np
import pytest
import torch
from mmengine.config import Config
from mmengine.logging import HistoryBuffer
from mmengine.runner import Runner

from mmrazor_quant.registry import register_all_modules
from mmrazor_quant.utils import (
    checkpoint_safe_globals,
    register_checkpoint_safe_globals,
)

REPO = osp.dirname(osp.dirname(osp.dirname(osp.abspath(__file__))))
CONFIG = osp.join(REPO, 'configs', 'fp32', 'resnet18_mnist.py')


def tiny_cfg(work_dir, name, max_epochs=2):
    """The fp32 ResNet config shrunk to a few seconds per run.

    512 training digits (8 iterations per epoch), an 8-wide backbone, and no
    random augmentation: mmengine does not checkpoint numpy's RNG, so random
    crops would differ between a resumed and an uninterrupted run.
    """
    cfg = Config.fromfile(CONFIG)
    cfg.work_dir = str(work_dir)
    cfg.experiment_name = name
    cfg.model.backbone.update(stem_channels=8, base_channels=8)
    cfg.model.head.in_channels = 64
    cfg.train_dataloader.dataset.update(
        indices=512, pipeline=[dict(type='PackClsInputs')])
    cfg.val_dataloader.dataset.indices = 128
    cfg.test_dataloader.dataset.indices = 128
    cfg.train_cfg.update(max_epochs=max_epochs, val_interval=100)
    # The same two-epoch schedule for every run, however far it trains.
    cfg.param_scheduler[1].end = 2
    cfg.default_hooks.logger.interval = 4
    cfg.default_hooks.checkpoint.max_keep_ckpts = -1
    cfg.visualizer.vis_backends = []
    return cfg


@pytest.fixture(scope='module', autouse=True)
def registered():
    register_all_modules(init_default_scope=False)
    register_checkpoint_safe_globals()


@pytest.fixture(scope='module')
def two_epoch_run(tmp_path_factory):
    work_dir = tmp_path_factory.mktemp('straight')
    runner = Runner.from_cfg(tiny_cfg(work_dir, 'straight'))
    runner.train()
    return work_dir, runner


def _state(runner):
    return {k: v.clone() for k, v in runner.model.state_dict().items()}


def test_resume_matches_uninterrupted_run(tmp_path, two_epoch_run):
    _, straight = two_epoch_run
    first = Runner.from_cfg(tiny_cfg(tmp_path, 'first', max_epochs=1))
    first.train()
    ckpt = osp.join(str(tmp_path), 'epoch_1.pth')
    assert osp.isfile(ckpt)

    cfg = tiny_cfg(tmp_path, 'resumed')
    cfg.resume, cfg.load_from = True, ckpt
    resumed = Runner.from_cfg(cfg)
    resumed.train()

    assert resumed.epoch == 2 and resumed.iter == 16
    expected, got = _state(straight), _state(resumed)
    assert expected.keys() == got.keys()
    for key in expected:
        torch.testing.assert_close(
            got[key], expected[key], rtol=1e-5, atol=1e-6, msg=key)
    # The resumed optimizer continued from epoch 1's moments.
    lr = resumed.optim_wrapper.get_lr()['lr'][0]
    assert lr == pytest.approx(straight.optim_wrapper.get_lr()['lr'][0])
    # And the message hub came back with its history.
    loss = resumed.message_hub.get_scalar('train/loss')
    assert len(loss.data[0]) == 16


def test_checkpoint_loads_with_weights_only(two_epoch_run):
    work_dir, _ = two_epoch_run
    path = osp.join(str(work_dir), 'epoch_2.pth')
    ckpt = torch.load(path, weights_only=True)
    buffer = ckpt['message_hub']['log_scalars']['train/loss']
    assert isinstance(buffer, HistoryBuffer)
    assert buffer.statistics('current') == pytest.approx(
        float(buffer.data[0][-1]))
    assert ckpt['meta']['epoch'] == 2
    assert isinstance(ckpt['message_hub']['runtime_info']['eta'], float)


def test_without_registration_weights_only_fails(two_epoch_run):
    work_dir, _ = two_epoch_run
    path = osp.join(str(work_dir), 'epoch_2.pth')
    # checkpoint_safe_globals() is exactly what makes the difference.
    saved = torch.serialization.get_safe_globals()
    torch.serialization.clear_safe_globals()
    try:
        with pytest.raises(UnpicklingError, match='HistoryBuffer'):
            torch.load(path, weights_only=True)
        # (The context manager removes its globals again on exit.)
        with torch.serialization.safe_globals(checkpoint_safe_globals()):
            assert torch.load(path, weights_only=True)['meta']['iter'] == 16
    finally:
        torch.serialization.add_safe_globals(saved)


class _GetattrPayload:
    """Pickles as ``getattr(obj, name)``, like a crafted checkpoint."""

    def __init__(self, obj, name):
        self.obj, self.name = obj, name

    def __reduce__(self):
        return getattr, (self.obj, self.name)


def _roundtrip(obj):
    buf = io.BytesIO()
    torch.save(obj, buf)
    buf.seek(0)
    return torch.load(buf, weights_only=True)


def test_only_history_buffer_statistics_are_reachable():
    assert _roundtrip(_GetattrPayload(HistoryBuffer, 'mean')) is \
        HistoryBuffer.mean
    with pytest.raises(UnpicklingError, match="'__init__'"):
        _roundtrip(_GetattrPayload(HistoryBuffer, '__init__'))
    with pytest.raises(UnpicklingError, match='only HistoryBuffer'):
        _roundtrip(_GetattrPayload(np.ndarray, 'tofile'))


def test_numpy_values_roundtrip_but_object_arrays_do_not():
    values = dict(a=np.arange(3, dtype=np.int32), b=np.float32(2.5),
                  c=np.zeros((2, 2), np.uint8))
    loaded = _roundtrip(values)
    np.testing.assert_array_equal(loaded['a'], values['a'])
    assert loaded['b'] == np.float32(2.5)
    assert loaded['c'].dtype == np.uint8
    with pytest.raises(UnpicklingError, match='ObjectDType'):
        _roundtrip(np.array([None], dtype=object))


def _load_tool(name):
    """The globals of tools/<name>.py, without running its main()."""
    return runpy.run_path(osp.join(REPO, 'tools', f'{name}.py'))


def test_train_tool_resume_flags(monkeypatch):
    tool = _load_tool('train')
    cfg = Config(dict(work_dir=None, resume=False, load_from='x.pth'))
    monkeypatch.setattr(sys, 'argv', ['train.py', CONFIG, '--resume'])
    args = tool['parse_args']()
    cfg = tool['merge_args'](cfg, args)
    assert (cfg.resume, cfg.load_from) == (True, None)
    assert cfg.work_dir == osp.join('./work_dirs', 'resnet18_mnist')

    monkeypatch.setattr(sys, 'argv', [
        'train.py', CONFIG, '--resume', 'a/epoch_1.pth', '--work-dir', 'w',
        '--cfg-options', 'train_cfg.max_epochs=7'
    ])
    cfg = tool['merge_args'](Config(dict(train_cfg=dict(max_epochs=4))),
                             tool['parse_args']())
    assert (cfg.resume, cfg.load_from) == (True, 'a/epoch_1.pth')
    assert (cfg.work_dir, cfg.train_cfg.max_epochs) == ('w', 7)


def test_test_tool_evaluates_a_checkpoint(two_epoch_run, tmp_path,
                                          monkeypatch, capsys):
    work_dir, straight = two_epoch_run
    cfg_path = osp.join(str(tmp_path), 'tiny.py')
    tiny_cfg(work_dir, 'for_test_tool').dump(cfg_path)
    monkeypatch.setattr(sys, 'argv', [
        'test.py', cfg_path,
        osp.join(str(work_dir), 'epoch_2.pth'), '--work-dir',
        str(tmp_path)
    ])
    _load_tool('test')['main']()
    # The tool evaluated the trained weights, not a fresh model.
    expected = straight.test()['accuracy/top1']
    logs = open(next(tmp_path.glob('*/*.log'))).read()
    assert f'accuracy/top1: {expected:.4f}' in logs
