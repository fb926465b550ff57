"""tools/analyze.py's pipeline on a tiny mmcls classifier and real digits:
a float checkpoint is calibrated, a quantized one is loaded as is."""
import os.path as osp

import pytest
import torch
from mmengine.config import Config
from mmengine.registry import MODELS, init_default_scope

from mmrazor_quant.analysis.build import is_quantized_state
from mmrazor_quant.analysis.report import analyze
from mmrazor_quant.registry import register_all_modules
from tests.test_engine.toy import runner_cfg, tiny_net_registered


@pytest.fixture(scope='module', autouse=True)
def registered():
    register_all_modules(init_default_scope=False)
    with tiny_net_registered():
        yield


def test_float_then_quantized_checkpoint(tmp_path, capsys):
    cfg = runner_cfg(
        str(tmp_path),
        test_cfg=dict(type='mmrazor_quant.PTQLoop', calibrate_steps=2))
    init_default_scope('mmcls')
    torch.manual_seed(0)
    float_ckpt = str(tmp_path / 'float.pth')
    architecture = MODELS.build(cfg.model.architecture)
    torch.save(dict(state_dict=architecture.state_dict()), float_ckpt)
    base = str(tmp_path / 'base.py')
    Config(dict(cfg)).dump(base)

    # an unreachable drop: the search stops at the budget of 1 layer
    first = analyze(cfg, float_ckpt, str(tmp_path / 'a'), steps=1,
                    data='test', mixed_budget=1, max_drop=-1.0,
                    config_path=base)
    out = capsys.readouterr().out
    assert 'layer-wise sensitivity' in out and 'graph-wise error' in out
    layers = ['backbone.layers.0', 'backbone.layers.3', 'head.fc']
    assert sorted(r.name for r in first['layerwise']) == layers
    assert len(first['rules']) == 1
    assert [count for count, _ in first['history']] == [0, 1]
    mixed = Config.fromfile(first['mixed_config'])
    assert mixed.model.quantizer.qconfig_mapping.module_name[0][0] == \
        first['rules'][0][0]
    assert all(osp.exists(f) for f in first['files'])

    quant_ckpt = str(tmp_path / 'model_ptq.pth')
    state = first['model'].state_dict()
    assert is_quantized_state(state)
    torch.save(dict(state_dict=state), quant_ckpt)
    second = analyze(cfg, quant_ckpt, str(tmp_path / 'b'), steps=1,
                     data='test')
    for a, b in zip(first['graphwise'], second['graphwise']):
        assert (a.name, a.snr) == (b.name, pytest.approx(b.snr))


def test_unknown_data_split(tmp_path):
    from mmrazor_quant.analysis.report import data_loader_cfg
    with pytest.raises(ValueError, match="data must be one of"):
        data_loader_cfg(runner_cfg(str(tmp_path)), 'val')
