"""A ``compile=True`` config (mmengine's Runner option) trains, validates
and calibrates a QAT model through the Runner with inductor on CPU, with
the eager run's numerics.

Kept short (inductor compiles each switch state once, slowly on 2 cores): one
QAT iteration with observers on, QATValLoop (fake quants on, then off), then
PTQLoop on the trained model (calibration, test).
"""
import pytest
import torch
from mmengine.runner import Runner

from mmrazor_quant.models.fake_quants.utils import named_fake_quants
from mmrazor_quant.registry import register_all_modules
from mmrazor_quant.utils import register_checkpoint_safe_globals
from .toy import loader, runner_cfg, tiny_net_registered


@pytest.fixture(autouse=True)
def registered():
    register_all_modules(init_default_scope=False)
    register_checkpoint_safe_globals()
    with tiny_net_registered():
        yield


def run(work_dir, compile_cfg):
    cfg = runner_cfg(
        str(work_dir), 'minmax',
        train_cfg=dict(type='mmrazor_quant.QATEpochBasedLoop',
                       max_epochs=1),
        train_dataloader=loader('train', 32),
        val_dataloader=loader('test', 32),
        test_dataloader=loader('test', 32),
        test_cfg=dict(type='mmrazor_quant.PTQLoop', calibrate_steps=1))
    if compile_cfg is not None:
        cfg.compile = compile_cfg
    runner = Runner.from_cfg(cfg)
    runner.train()
    val_metrics = runner.val()
    trained = {k: v.clone() for k, v in runner.model.state_dict().items()}
    test_metrics = runner.test()
    calibrated = {
        name: (fq.scale.clone(), fq.zero_point.clone())
        for name, fq in named_fake_quants(runner.model)
    }
    return runner, val_metrics, test_metrics, trained, calibrated


@pytest.mark.timeout(600)
def test_compiled_runner_matches_eager(tmp_path):
    torch._dynamo.reset()
    runner, val_c, test_c, trained_c, qparams_c = run(
        tmp_path / 'compiled', True)
    model = runner.model
    # mmengine compiled train_step, the loops the other three.
    for step in ('train_step', 'val_step', 'test_step', 'calibrate_step'):
        assert hasattr(getattr(model, step), '_torchdynamo_orig_callable'), \
            step
    _, val_e, test_e, trained_e, qparams_e = run(tmp_path / 'eager', None)
    assert set(val_c) == set(val_e) and set(test_c) == set(test_e)
    for key in val_e:  # qat.* and original.* accuracy and losses
        assert val_c[key] == pytest.approx(val_e[key], rel=1e-4), key
    for key in test_e:
        assert test_c[key] == pytest.approx(test_e[key], rel=1e-4), key
    for name, value in trained_e.items():
        torch.testing.assert_close(trained_c[name], value, rtol=1e-4,
                                   atol=1e-5, msg=name)
    # The qparams PTQLoop calibrated (compiled calibrate_step) agree too.
    assert qparams_c.keys() == qparams_e.keys() and qparams_e
    for name, (scale, zero_point) in qparams_e.items():
        torch.testing.assert_close(qparams_c[name][0], scale, rtol=1e-5,
                                   atol=0, msg=name)
        assert torch.equal(qparams_c[name][1], zero_point), name
