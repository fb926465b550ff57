"""OpenVINOQuantizer's ``symmetric_depthwise_inputs``: with asymmetric
activations, a depthwise conv's input still gets the symmetric grid, so the
CPU plugin runs that conv as an i8 (or zero-point-0 u8) kernel instead of a
u8 kernel with a source zero-point, which costs a depthwise conv the most
(PP-OCRv4's recogniser, docs/onnx_models.md); every other input keeps its
asymmetric grid.

The net, PP-LCNet's block in small: a stem conv and Hardswish (an output
that is not centred: at least -0.375), a padded 3x3 depthwise conv and
Hardswish, a pointwise conv, global pooling and a linear head.
"""
import pytest
import torch
from torch import nn

from mmrazor_quant.deploy import check_parity, export_model
from ..int8_host import int8_weight_bits
from .test_openvino_placement import UNSIGNED, _quantize, _runtime_layers

ov = pytest.importorskip('openvino')

U8_ASYM = dict(UNSIGNED, is_symmetry=False)


class DepthwiseBlockNet(nn.Module):

    def __init__(self, width: int = 8) -> None:
        super().__init__()
        self.stem = nn.Conv2d(3, width, 3, padding=1)
        self.act1 = nn.Hardswish()
        self.dw = nn.Conv2d(width, width, 3, padding=1, groups=width)
        self.act2 = nn.Hardswish()
        self.pw = nn.Conv2d(width, 2 * width, 1)
        self.gap = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(2 * width, 5)

    def forward(self, inputs, data_samples=None, mode='tensor'):
        x = self.act2(self.dw(self.act1(self.stem(inputs))))
        return self.fc(torch.flatten(self.gap(self.pw(x)), 1))


def _input_fake_quants(model):
    """The activation fake quant read by each conv, by the conv's name."""
    gm = model.qmodels['tensor']
    modules = dict(gm.named_modules())
    found = {}
    for node in gm.graph.nodes:
        if node.op == 'call_module' and node.target in ('stem', 'dw', 'pw'):
            source = node.args[0]
            found[node.target] = modules[source.target]
    return found


@pytest.fixture(scope='module')
def data():
    torch.manual_seed(0)
    return torch.randn(32, 3, 12, 12) * 2


@pytest.mark.parametrize('symmetric', [True, False])
def test_depthwise_input_grid_closed_form(data, symmetric):
    """Symmetric: ``scale = max(-min, max) / 127.5``, zero-point 128 (the
    signed grid, written as int8 with zero-point 0); the pointwise conv's
    input keeps ``scale = (max - min) / 255``,
    ``zero_point = -round(min / scale)``."""
    torch.manual_seed(1)
    model = _quantize(DepthwiseBlockNet(), data, U8_ASYM,
                      symmetric_depthwise_inputs=symmetric)
    found = _input_fake_quants(model)
    dw, pw = found['dw'], found['pw']
    assert dw is not pw
    lo, hi = float(dw.observer.min_val), float(dw.observer.max_val)
    assert -0.375 <= lo < 0 < hi  # Hardswish: not centred
    if symmetric:
        assert dw.qscheme.is_symmetry
        assert float(dw.scale) == pytest.approx(max(-lo, hi) / 127.5,
                                                rel=1e-6)
        assert int(dw.zero_point) == 128
    else:
        assert not dw.qscheme.is_symmetry
        scale = (hi - lo) / 255
        assert float(dw.scale) == pytest.approx(scale, rel=1e-6)
        assert int(dw.zero_point) == round(-lo / scale)
    lo, hi = float(pw.observer.min_val), float(pw.observer.max_val)
    scale = (hi - lo) / 255
    assert not pw.qscheme.is_symmetry
    assert float(pw.scale) == pytest.approx(scale, rel=1e-6)
    assert int(pw.zero_point) == round(-lo / scale) > 0


def test_symmetric_inputs_are_off_for_symmetric_activations(data):
    """With symmetric activations there is nothing to change: the
    depthwise conv's fake quant is the global one."""
    model = _quantize(DepthwiseBlockNet(), data,
                      dict(UNSIGNED, is_symmetry=True),
                      symmetric_depthwise_inputs=True)
    found = _input_fake_quants(model)
    assert all(fq.qscheme.is_symmetry for fq in found.values())
    assert not any('symmetric_depthwise' in fq.name
                   for fq in found.values())


def test_depthwise_conv_runs_without_zero_point(data, tmp_path):
    """In OpenVINO the depthwise conv runs i8 with the rule and u8 (a
    source zero-point) without it; the pointwise conv is u8 either way; the
    export agrees with the simulation."""
    if int8_weight_bits() < 8:
        pytest.skip('int8 kernel precisions were checked on a CPU with VNNI')
    precisions = {}
    for symmetric in (True, False):
        torch.manual_seed(1)
        model = _quantize(DepthwiseBlockNet(), data, U8_ASYM,
                          symmetric_depthwise_inputs=symmetric)
        path = str(tmp_path / f'model_{symmetric}.onnx')
        result = export_model(model, data[:2], path, 'openvino')
        report = check_parity(result.deploy_model, path, data,
                              runtime='openvino')
        assert report.sqnr_db >= 35, report.format()
        precisions[symmetric] = {
            names.split('/')[1]: prec
            for kind, prec, names in _runtime_layers(path)
            if kind == 'Convolution'
        }
    assert precisions[True]['dw'] == 'i8'
    assert precisions[False]['dw'] == 'u8'
    assert precisions[True]['pw'] == precisions[False]['pw'] == 'u8'
