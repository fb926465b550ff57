"""examples/custom_algorithm (TQT) end to end, and its formulas."""
import json
import math

import pytest
import torch

from mmrazor_quant.deploy import build_deploy_model, export_model
from mmrazor_quant.deploy.qparams_table import fake_quant_qparams
from mmrazor_quant.models.fake_quants import named_fake_quants
from .conftest import ALGORITHM_CONFIG, example_batch, run_ptq


def test_tqt_ptq_export_power_of_two_scales(tmp_path, float_checkpoint):
    import tqt
    runner = run_ptq(ALGORITHM_CONFIG, str(tmp_path), float_checkpoint)
    fake_quants = dict(named_fake_quants(runner.model.qmodels['tensor']))
    assert fake_quants and all(
        isinstance(fq, tqt.TQTFakeQuantize) for fq in fake_quants.values())
    x = example_batch(runner)
    # The deploy model (what every exporter writes) holds the TQT scales.
    table = fake_quant_qparams(build_deploy_model(runner.model))
    assert set(table) == set(fake_quants)
    for name, fq in fake_quants.items():
        levels = 2**7 if fq.qscheme.is_signed else 2**8
        expected = 2.0**math.ceil(float(fq.log2_t)) / levels
        assert table[name]['scale'] == [expected]
        assert table[name]['zero_point'] == [0]
        # A power of two: the mantissa is exactly 0.5.
        assert math.frexp(expected)[0] == 0.5

    # An activation fake quant on a real batch equals its formula.
    fq = next(fq for fq in fake_quants.values() if not fq.qscheme.is_signed)
    s = 2.0**math.ceil(float(fq.log2_t)) / fq.levels
    qmin, qmax = fq.quant_min, fq.quant_max
    with torch.no_grad():
        y = fq(x)
    expected = torch.clamp(torch.round(x / s), qmin, qmax) * s
    torch.testing.assert_close(y, expected, atol=0, rtol=0)
    assert 0 < int((y != 0).sum()) < y.numel()


def _fake_quant(bit=4, qdtype='qint8'):
    from tqt import TQTFakeQuantize
    return TQTFakeQuantize(
        observer=dict(type='PowerOfTwoMaxObserver'),
        qscheme=dict(qdtype=qdtype, bit=bit, is_symmetry=True))


def test_tqt_observer_threshold_and_scale():
    fq = _fake_quant(bit=4)
    fq(torch.tensor([-3.0, 0.1, 2.9]))
    # max|x| = 3 -> t = 4 -> s = 4 / 2^3
    assert float(fq.log2_t) == 2.0
    scale, zero_point = fq.get_qparams()
    assert float(scale) == 0.5 and int(zero_point) == 0
    unsigned = _fake_quant(bit=8, qdtype='quint8')
    unsigned(torch.tensor([0.0, 5.0]))
    # t = 8 -> s = 8 / 2^8
    assert float(unsigned.get_qparams()[0]) == 8 / 256


def test_tqt_forward_and_gradients_match_the_formulas():
    fq = _fake_quant(bit=4)
    fq(torch.tensor([-3.0, 3.0]))  # calibrate: log2_t = 2, s = 0.5
    fq.disable_observer()
    with torch.no_grad():
        fq.log2_t.fill_(1.3)  # ceil -> 2, still s = 0.5
    x = torch.tensor([-5.0, -0.3, 0.26, 0.75, 1.2, 3.9],
                     requires_grad=True)
    y = fq(x)
    # round(x / 0.5) = [-10 -> clip -8, -1, 1, 2 (1.5 ties to even), 2, 8
    # -> clip 7]
    assert y.tolist() == [-4.0, -0.5, 0.5, 1.0, 1.0, 3.5]
    weights = torch.tensor([1.0, 2.0, 3.0, 4.0, 5.0, 6.0])
    (y * weights).sum().backward()
    assert x.grad.tolist() == [0.0, 2.0, 3.0, 4.0, 5.0, 0.0]
    v = x.detach() / 0.5
    d = torch.tensor([-8.0, 0, 0, 0, 0, 7.0])
    inside = torch.tensor([0.0, 1, 1, 1, 1, 0])
    d = d + inside * (torch.round(v) - v)
    expected = float((weights * d).sum() * 0.5 * math.log(2.0))
    assert float(fq.log2_t.grad) == pytest.approx(expected, rel=1e-6)


def test_tqt_half_away_rounding_and_scheme_errors():
    from tqt import tqt_fake_quantize
    x = torch.tensor([-0.75, -0.25, 0.25, 0.75])  # v = x / 0.5: +-0.5, 1.5
    log2_t = torch.tensor(2.0)  # s = 4 / 8
    even = tqt_fake_quantize(x, log2_t, 4, True)
    away = tqt_fake_quantize(x, log2_t, 4, True, 'half_away_from_zero')
    assert even.tolist() == [-1.0, 0.0, 0.0, 1.0]
    assert away.tolist() == [-1.0, -0.5, 0.5, 1.0]
    from tqt import TQTFakeQuantize
    with pytest.raises(ValueError, match='needs a per-tensor scheme'):
        TQTFakeQuantize(
            observer=dict(type='PowerOfTwoMaxObserver'),
            qscheme=dict(qdtype='qint8', is_symmetry=True,
                         is_symmetric_range=True))


def test_tqt_onnx_export(tmp_path, float_checkpoint):
    runner = run_ptq(ALGORITHM_CONFIG, str(tmp_path), float_checkpoint,
                     **{'test_dataloader.dataset.indices': 64})
    result = export_model(runner.model, example_batch(runner),
                          str(tmp_path / 'tqt.onnx'), backend='onnxruntime')
    with open(result.files['qparams']) as f:
        fake_quants = json.load(f)['fake_quants']
    assert fake_quants
    # TQT scales are powers of two, and several are equal (the export
    # shares their initializer): every exported scale must stay one.
    scales = torch.cat([
        torch.as_tensor(entry['scale'], dtype=torch.float64).flatten()
        for entry in fake_quants.values()
    ])
    torch.testing.assert_close(
        torch.exp2(torch.round(torch.log2(scales))), scales, rtol=0, atol=0)
