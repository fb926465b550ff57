"""QAT / LSQ training loops and QATValLoop with the real Runner."""
import math
import os.path as osp

import pytest
import torch
from mmengine.hooks import Hook
from mmengine.runner import Runner

from mmrazor_quant.engine import QATEpochBasedLoop
from mmrazor_quant.models.fake_quants.utils import (
    iter_fake_quants,
    named_fake_quants,
)
from mmrazor_quant.models.qat_modules.bn_fold import FusedBnMixin
from mmrazor_quant.registry import register_all_modules
from mmrazor_quant.utils import register_checkpoint_safe_globals
from .toy import runner_cfg, tiny_net_registered

TRAIN_CFGS = {
    'qat': dict(type='mmrazor_quant.QATEpochBasedLoop', freeze_bn_begin=2,
                disable_observer_begin=2),
    'lsq': dict(type='mmrazor_quant.LSQEpochBasedLoop', freeze_bn_begin=2),
}


@pytest.fixture(autouse=True)
def registered():
    register_all_modules(init_default_scope=False)
    register_checkpoint_safe_globals()
    with tiny_net_registered():
        yield


class StateRecorder(Hook):
    """Records, before every iteration, the observer flags and whether BN
    statistics are frozen; on the first iteration of a fresh run, every
    fake quant's input and its scale right after the forward."""

    def __init__(self):
        self.states, self.first_iter = [], {}
        self._handles = []

    def before_train_iter(self, runner, batch_idx, data_batch=None):
        model = runner.model
        observers = {int(fq.observer_enabled[0])
                     for fq in iter_fake_quants(model)}
        frozen = {m.bn_frozen for m in model.modules()
                  if isinstance(m, FusedBnMixin)}
        self.states.append((runner.iter, observers, frozen))
        if runner.iter == 0:
            for name, fq in named_fake_quants(model):
                self._handles.append(fq.register_forward_hook(
                    lambda m, args, out, name=name: self.first_iter.setdefault(
                        name, []).append((args[0].detach().clone(),
                                          m.scale.detach().clone()))))

    def after_train_iter(self, runner, batch_idx, data_batch=None,
                         outputs=None):
        for handle in self._handles:
            handle.remove()
        self._handles.clear()


def train(work_dir, kind, max_epochs, resume_from=None):
    cfg = runner_cfg(
        str(work_dir), 'minmax' if kind == 'qat' else 'lsq',
        train_cfg=dict(TRAIN_CFGS[kind], max_epochs=max_epochs))
    if resume_from:
        cfg.resume, cfg.load_from = True, resume_from
    runner = Runner.from_cfg(cfg)
    recorder = StateRecorder()
    runner.register_hook(recorder)
    runner.train()
    return runner, recorder


def lsq_init_scale(x, fake_quant):
    """LSQ: 2 * mean|x| / sqrt(quant_max), per channel along ch_axis."""
    if fake_quant.is_per_channel:
        mean = x.abs().transpose(0, fake_quant.ch_axis).flatten(1).mean(1)
    else:
        mean = x.abs().mean()
    return (2 * mean / math.sqrt(fake_quant.quant_max)).clamp(
        min=torch.finfo(torch.float32).eps)


@pytest.mark.slow
@pytest.mark.parametrize('kind', ['qat', 'lsq'])
def test_resume_matches_uninterrupted_training(tmp_path, kind):
    full, full_rec = train(tmp_path / 'full', kind, 2)
    # The checkpoint the uninterrupted run wrote after epoch 1 is the one a
    # run stopped there leaves behind.
    epoch1_path = osp.join(full.work_dir, 'epoch_1.pth')
    resumed, resumed_rec = train(
        tmp_path / 'resumed', kind, 2, resume_from=epoch1_path)

    # 4 iterations per epoch; switches at epoch 2 (iteration 4).
    states = [(it, obs, frozen) for it, obs, frozen in full_rec.states]
    on_first = {1} if kind == 'qat' else {0}
    assert states[1:4] == [(i, on_first, {False}) for i in (1, 2, 3)]
    assert states[4:] == [(i, {0}, {True}) for i in (4, 5, 6, 7)]
    assert resumed_rec.states == full_rec.states[4:]
    assert resumed.train_loop.epoch == 2 and resumed.iter == 8

    expected = full.model.state_dict()
    actual = resumed.model.state_dict()
    assert list(actual) == list(expected)
    for key, value in expected.items():
        torch.testing.assert_close(actual[key], value, rtol=1e-5, atol=1e-6,
                                   msg=f'{key} differs after resume')
    scales = [k for k in expected if k.endswith('.scale')]
    zero_points = [k for k in expected if k.endswith('.zero_point')]
    assert len(scales) >= 6 and len(zero_points) == len(scales)
    # Epoch 2 moved the model away from the epoch-1 checkpoint: weights,
    # and LSQ's learned scales (QAT's stay fixed once observers are off).
    epoch1 = torch.load(epoch1_path, map_location='cpu')['state_dict']
    moved = [k for k in expected if not torch.equal(epoch1[k], expected[k])]
    assert 'architecture.head.fc.weight' in moved
    weight_scales = {k for k in scales if 'weight_fake_quant' in k}
    assert len(weight_scales) == 3
    assert set(scales) & set(moved) >= (weight_scales if kind == 'lsq' else
                                       set())
    if kind == 'qat':
        assert not set(scales) & set(moved)

    if kind == 'lsq':
        # The resumed run never re-initialised: no observer ran.
        assert resumed_rec.first_iter == {}
        assert {fq.observer_enabled.item()
                for fq in iter_fake_quants(resumed.model)} == {0}


def test_lsq_first_iteration_initialises_scales(tmp_path):
    runner, recorder = train(tmp_path, 'lsq', 1)
    assert recorder.states[0][1] == {1}  # observers on for iteration 1
    assert all(obs == {0} for _, obs, _ in recorder.states[1:])
    fake_quants = dict(named_fake_quants(runner.model))
    assert set(recorder.first_iter) == set(fake_quants)
    for name, calls in recorder.first_iter.items():
        assert len(calls) == 1, name
        x, scale = calls[0]
        expected = lsq_init_scale(x, fake_quants[name])
        torch.testing.assert_close(scale, expected, rtol=1e-5, atol=1e-8)
        # ... and learned afterwards.
        assert not torch.equal(fake_quants[name].scale.detach(), expected), \
            name


def test_qat_val_loop_reports_quantized_and_float(tmp_path):
    runner, _ = train(tmp_path, 'qat', 1)
    model = runner.model
    flags = [(fq.observer_enabled.item(), fq.fake_quant_enabled.item())
             for fq in iter_fake_quants(model)]
    metrics = runner.val()
    assert set(metrics) == {'qat.accuracy/top1', 'original.accuracy/top1'}
    assert [(fq.observer_enabled.item(), fq.fake_quant_enabled.item())
            for fq in iter_fake_quants(model)] == flags
    assert {f for _, f in flags} == {1}

    def accuracy(fake_quant_on):
        correct = total = 0
        for fq in iter_fake_quants(model):
            fq.enable_fake_quant(fake_quant_on)
            fq.disable_observer()
        with torch.no_grad():
            for batch in runner.val_dataloader:
                data = model.data_preprocessor(batch)
                logits = model(data['inputs'], mode='tensor')
                labels = torch.cat([s.gt_label.label
                                    for s in data['data_samples']])
                correct += int((logits.argmax(1) == labels).sum())
                total += len(labels)
        return 100 * correct / total

    model.eval()
    assert metrics['qat.accuracy/top1'] == pytest.approx(accuracy(True))
    assert metrics['original.accuracy/top1'] == pytest.approx(
        accuracy(False))


def test_iter_based_switches(tmp_path):
    cfg = runner_cfg(
        str(tmp_path),
        train_cfg=dict(type='mmrazor_quant.QATIterBasedLoop', max_iters=4,
                       val_interval=2, freeze_bn_begin=2,
                       disable_observer_begin=3))
    cfg.param_scheduler = None
    cfg.default_hooks = dict(checkpoint=dict(type='CheckpointHook',
                                             by_epoch=False, interval=4))
    runner = Runner.from_cfg(cfg)
    recorder = StateRecorder()
    runner.register_hook(recorder)
    runner.train()
    assert recorder.states == [(0, {1}, {False}), (1, {1}, {True}),
                               (2, {0}, {True}), (3, {0}, {True})]


@pytest.mark.parametrize('key', ['freeze_bn_begin', 'disable_observer_begin'])
def test_begin_must_be_an_int(tmp_path, key):
    runner = Runner.from_cfg(runner_cfg(str(tmp_path)))
    with pytest.raises(TypeError, match=f'`{key}` must be an int'):
        QATEpochBasedLoop(runner, runner.cfg.train_dataloader, 1,
                          **{key: 1.5})
