"""PTQLoop and calibrate() with the real Runner on MNIST5k digits."""
import copy
import os.path as osp

import pytest
import torch
from mmengine.runner import Runner, load_checkpoint
from torch.utils.data import DataLoader

from mmrazor_quant.engine import PTQLoop, calibrate
from mmrazor_quant.models.fake_quants.utils import named_fake_quants
from mmrazor_quant.registry import MODELS, register_all_modules
from mmrazor_quant.utils import register_checkpoint_safe_globals
from .toy import loader, quant_model, runner_cfg, tiny_net_registered

PTQ = dict(type='mmrazor_quant.PTQLoop', calibrate_steps=2)


@pytest.fixture(autouse=True)
def registered():
    register_all_modules(init_default_scope=False)
    register_checkpoint_safe_globals()
    with tiny_net_registered():
        yield


def ptq_runner(work_dir, **test_cfg):
    cfg = runner_cfg(str(work_dir), test_cfg=dict(PTQ, **test_cfg))
    # Random crops in training: calibration must swap in the test pipeline.
    cfg.train_dataloader = loader('train', 128, shuffle=True,
                                  random_crop=True)
    return Runner.from_cfg(cfg)


def fake_quant_flags(model):
    return {(int(fq.observer_enabled[0]), int(fq.fake_quant_enabled[0]),
             int(fq.initialized[0]))
            for _, fq in named_fake_quants(model)}


def test_ptq_calibrates_saves_and_reloads(tmp_path):
    runner = ptq_runner(tmp_path / 'ptq')
    loop = runner.test_loop
    # Principle 5 (docs/architecture.md): the training split, with the
    # (deterministic) test pipeline.
    calib_set = loop.calibrate_dataloader.dataset
    assert calib_set.split == 'train' and len(calib_set) == 128
    assert [type(t).__name__ for t in calib_set.pipeline.transforms] == \
        ['PackClsInputs']
    assert loop.dataloader.dataset.split == 'test'

    metrics = runner.test()
    assert set(metrics) == {'accuracy/top1'}
    assert 0 <= metrics['accuracy/top1'] <= 100
    # Calibrated: observers off, fake quants on, qparams everywhere.
    assert fake_quant_flags(runner.model) == {(0, 1, 1)}

    path = osp.join(runner.work_dir, 'model_ptq.pth')
    assert osp.isfile(path)
    fresh = MODELS.build(quant_model()).eval()
    assert fake_quant_flags(fresh) == {(1, 1, 0)}
    load_checkpoint(fresh, path, map_location='cpu')  # weights_only=True
    assert fake_quant_flags(fresh) == {(0, 1, 1)}
    batch = next(iter(runner.test_dataloader))
    with torch.no_grad():
        inputs = runner.model.data_preprocessor(batch)['inputs']
        expected = runner.model(inputs, mode='tensor')
        actual = fresh(inputs, mode='tensor')
    torch.testing.assert_close(actual, expected, rtol=0, atol=0)

    # only_val evaluates the saved model to the same numbers.
    cfg = runner_cfg(str(tmp_path / 'val'), load_from=path,
                     test_cfg=dict(PTQ, only_val=True))
    val_runner = Runner.from_cfg(cfg)
    assert val_runner.test_loop.calibrate_dataloader is None
    assert val_runner.test() == metrics


def test_calibrate_records_float_ranges():
    """Each observer holds the min/max of the float tensors its fake quant
    sees over all calibration batches (fake quants off while calibrating).
    """
    torch.manual_seed(0)
    model = MODELS.build(quant_model()).eval()
    data = Runner.build_dataloader(loader('train', 64, batch_size=16))
    batches = list(data)[:3]

    reference = copy.deepcopy(model)
    seen = {}
    for name, fq in named_fake_quants(reference):
        fq.disable_observer()
        fq.disable_fake_quant()
        fq.register_forward_pre_hook(
            lambda m, args, name=name: seen.setdefault(name, []).append(
                args[0].detach().clone()))
    with torch.no_grad():
        for batch in batches:
            reference.calibrate_step(batch)

    assert calibrate(model, batches + batches, 3, show_progress=False) == 3
    checked = 0
    for name, fq in named_fake_quants(model):
        xs = seen[name]
        if fq.is_per_channel:
            flat = torch.cat([x.transpose(0, fq.ch_axis).flatten(1)
                              for x in xs], 1)
            lo, hi = flat.min(1).values, flat.max(1).values
        else:
            flat = torch.cat([x.flatten() for x in xs])
            lo, hi = flat.min(), flat.max()
        torch.testing.assert_close(fq.observer.min_val, lo, rtol=0,
                                   atol=1e-6)
        torch.testing.assert_close(fq.observer.max_val, hi, rtol=0,
                                   atol=1e-6)
        checked += 1
    assert checked >= 6  # 3 weights (2 conv, fc) and the activations
    assert fake_quant_flags(model) == {(0, 1, 1)}


@pytest.mark.parametrize('test_cfg, match', [
    (dict(calibrate_steps=0), '`calibrate_steps` must be an int >= 1'),
])
def test_bad_calibration_config(tmp_path, test_cfg, match):
    runner = ptq_runner(tmp_path, **test_cfg)
    with pytest.raises(ValueError, match=match):
        runner.test()
    assert not osp.exists(osp.join(runner.work_dir, 'model_ptq.pth'))


def test_empty_calibrate_dataloader(tmp_path):
    runner = ptq_runner(tmp_path)
    with pytest.raises(ValueError, match='`calibrate_dataloader` is empty'):
        PTQLoop(runner, loader('test', 64), dict(type='Accuracy'),
                calibrate_dataloader=DataLoader([], batch_size=1))


def test_no_training_data_is_an_error_not_the_test_set(tmp_path):
    cfg = runner_cfg(str(tmp_path), test_cfg=PTQ)
    cfg.train_dataloader = None
    cfg.train_cfg = None
    cfg.optim_wrapper = None
    cfg.param_scheduler = None
    cfg.val_cfg = None
    cfg.val_dataloader = None
    cfg.val_evaluator = None
    with pytest.raises(ValueError, match='`calibrate_dataloader`'):
        Runner.from_cfg(cfg).test()


def test_only_val_needs_a_calibrated_checkpoint(tmp_path):
    runner = ptq_runner(tmp_path, only_val=True)
    with pytest.raises(RuntimeError, match=r'only_val=True.*load_from'):
        runner.test()
