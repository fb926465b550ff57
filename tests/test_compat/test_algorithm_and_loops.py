"""MMArchitectureQuant and PTQLoop as MMRazor's code drives them:
sync_qparams, input_shapes, get_deploy_model, the quantizer's export_onnx,
and calibrate_steps larger than the calibration loader."""
import onnx
import pytest
import torch
from mmengine.runner import Runner

from mmrazor_quant.models.fake_quants.utils import (
    disable_observer,
    named_fake_quants,
)
from mmrazor_quant.registry import MODELS, register_all_modules
from mmrazor_quant.utils import register_checkpoint_safe_globals
from ..test_engine.toy import (
    loader,
    quant_model,
    runner_cfg,
    tiny_net_registered,
)
from .helpers import captured_log


@pytest.fixture(autouse=True)
def registered():
    register_all_modules(init_default_scope=False)
    register_checkpoint_safe_globals()
    with tiny_net_registered():
        yield


def test_sync_qparams_is_a_logged_no_op():
    model = MODELS.build(quant_model())
    before = {k: v.clone() for k, v in model.state_dict().items()}
    with captured_log() as log:
        model.sync_qparams('loss')
        model.sync_qparams('predict')  # logged once per model
    assert log.getvalue().count('sync_qparams: nothing to sync') == 1
    after = model.state_dict()
    assert all(torch.equal(before[k], after[k]) for k in before)
    # every mode's graph calls the same fake-quant objects
    targets = [{id(gm.get_submodule(str(n.target)))
                for n in gm.graph.nodes if n.op == 'call_module'
                and 'act_fake_quants' in str(n.target)}
               for gm in model.qmodels.values()]
    assert len(targets) == 3 and targets[0] == targets[1] == targets[2]
    with pytest.raises(ValueError, match="src_mode 'train' is not one of "
                       'forward_modes'):
        model.sync_qparams('train')


def test_input_shapes_is_accepted_and_logged():
    cfg = quant_model()
    cfg['input_shapes'] = (1, 1, 28, 28)
    with captured_log() as log:
        model = MODELS.build(cfg)
    assert 'input_shapes=(1, 1, 28, 28) is not used' in log.getvalue()
    # no dummy forward ran: nothing was observed
    assert not any(fq.is_initialized for _, fq in named_fake_quants(model))


def test_get_deploy_model_and_export_onnx(tmp_path):
    model = MODELS.build(quant_model()).eval()
    x = torch.randn(2, 1, 28, 28)
    with torch.no_grad():
        model(x, mode='tensor')  # observers record x's ranges
    disable_observer(model)
    deploy = model.get_deploy_model()
    with torch.no_grad():
        assert torch.allclose(deploy(x), model(x, mode='tensor'), atol=1e-5)
    path = str(tmp_path / 'model.onnx')
    model.quantizer.export_onnx(model, (x, ), path)
    ops = [n.op_type for n in onnx.load(path).graph.node]
    assert ops.count('QuantizeLinear') >= 3


def ptq_runner(work_dir, calibrate_steps):
    cfg = runner_cfg(
        str(work_dir),
        test_cfg=dict(type='mmrazor_quant.PTQLoop',
                      calibrate_steps=calibrate_steps,
                      calibrate_dataloader=loader('train', 64,
                                                  batch_size=16)))
    return Runner.from_cfg(cfg)


def test_calibrate_steps_larger_than_the_loader(tmp_path):
    runner = ptq_runner(tmp_path, calibrate_steps=32)  # 4 batches there
    assert runner.test_loop.calibrate_steps == 4
    seen = []
    step = runner.model.calibrate_step
    runner.model.calibrate_step = lambda data: seen.append(1) or step(data)
    with captured_log() as log:
        runner.test()
    assert len(seen) == 4
    assert all(fq.is_initialized for _, fq in named_fake_quants(runner.model))
    assert 'PTQ: calibrating on 4 batches' in log.getvalue()


def test_calibrate_steps_warning_is_one_line(tmp_path):
    cfg = runner_cfg(
        str(tmp_path),
        test_cfg=dict(type='mmrazor_quant.PTQLoop', calibrate_steps=5,
                      calibrate_dataloader=loader('train', 64,
                                                  batch_size=16)))
    runner = Runner.from_cfg(cfg)
    with captured_log() as log:
        runner.test_loop
    lines = [line for line in log.getvalue().splitlines()
             if 'calibrate_steps' in line]
    assert lines == ['PTQ: `calibrate_steps`=5 is larger than '
                     '`calibrate_dataloader` (4 batches per rank): '
                     'calibrating on 4 batches']
