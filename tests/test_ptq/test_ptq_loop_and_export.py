"""PTQLoop(ptq_passes=...) end to end, and a W4A4 QDrop model exported to
ONNX opset 21 that onnxruntime runs like its simulation."""
import pytest
import torch
from mmengine.runner import Runner

from mmrazor_quant.deploy import check_parity, export_model
from mmrazor_quant.ptq import build_ptq_passes, qdrop
from .conftest import build_quantized, calibrate


def test_build_ptq_passes_stages_and_errors():
    passes = build_ptq_passes([
        dict(type='mmrazor_quant.qdrop', drop_prob=0.5),
        dict(type='equalize_cross_layer'),
        dict(type='correct_bias', stage='after_calibration'),
    ])
    assert [(p.name, p.stage) for p in passes] == [
        ('qdrop', 'after_calibration'),
        ('equalize_cross_layer', 'before_calibration'),
        ('correct_bias', 'after_calibration')]
    assert passes[0].kwargs == dict(drop_prob=0.5)
    with pytest.raises(KeyError, match='not in the mmrazor_quant'):
        build_ptq_passes([dict(type='adaroundd')])
    with pytest.raises(ValueError, match='stage'):
        build_ptq_passes([dict(type='brecq', stage='later')])
    with pytest.raises(TypeError, match=r'ptq_passes\[0\]'):
        build_ptq_passes(['qdrop'])


def test_ptq_loop_runs_passes(tmp_path):
    from tests.test_engine.toy import runner_cfg, tiny_net_registered
    with tiny_net_registered():
        cfg = runner_cfg(str(tmp_path))
        cfg.log_level = 'INFO'
        cfg.test_cfg = dict(
            type='mmrazor_quant.PTQLoop',
            calibrate_steps=2,
            ptq_passes=[
                dict(type='equalize_cross_layer'),
                dict(type='correct_bias', num_samples=64),
                dict(type='qdrop', iters=3, num_samples=64, batch_size=16),
            ])
        runner = Runner.from_cfg(cfg)
        metrics = runner.test()
    assert 'accuracy/top1' in metrics
    log = open(next(tmp_path.rglob('*.log'))).read()
    for name in ('equalize_cross_layer', 'correct_bias', 'qdrop [1/'):
        assert name in log
    assert log.index('equalize_cross_layer') < log.index('calibrating') \
        < log.index('PTQ pass correct_bias')
    assert (tmp_path / 'model_ptq.pth').exists()


def test_w4a4_qdrop_exports_to_onnx_opset21(float_state, digits, tmp_path):
    pytest.importorskip('onnxruntime')
    images = digits[0]
    model = calibrate(build_quantized(float_state, w_bit=4, a_bit=4),
                      images[:256])
    qdrop(model, [images[:256]], iters=10, num_samples=128, batch_size=32)
    path = str(tmp_path / 'qdrop_w4a4.onnx')
    result = export_model(model, images[:2], path, 'onnxruntime', opset=21)
    assert result.onnx_model.opset_import[0].version == 21
    x = images[300:556]
    with torch.no_grad():
        torch.testing.assert_close(result.deploy_model(x),
                                   model(x, mode='tensor'), rtol=0,
                                   atol=1e-4)
    report = check_parity(result.deploy_model, path, x)
    print(report.format())
    # Measured here: 100 % agreement, 56 dB SQNR, 0.64 output steps.
    # PPQ's bound (SNR error < 1 %) is 20 dB.
    assert report.num_samples == 256
    assert report.agreement >= 0.99
    assert report.sqnr_db >= 40
    assert report.max_step_diff <= 1.0
