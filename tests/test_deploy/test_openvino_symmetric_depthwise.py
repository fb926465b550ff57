"""OpenVINOQuantizer's ``depthwise_symmetric_tolerance``: with asymmetric
activations, a depthwise conv's input takes a grid without a zero-point
where its histogram MSE stays within the tolerance, so the CPU plugin runs
that conv as an i8 (or zero-point-0 u8) kernel instead of a u8 kernel with
a source zero-point, which costs a depthwise conv the most (PP-OCRv4's
recogniser, docs/onnx_models.md); every other input keeps its asymmetric
grid.

The net, PP-LCNet's block in small: a stem conv and Hardswish (an output
that is not centred: at least -0.375), a padded 3x3 depthwise conv and
Hardswish, a pointwise conv, global pooling and a linear head.
"""
import pytest
import torch
from torch import nn

from mmrazor_quant.deploy import check_parity, export_model
from mmrazor_quant.models.fake_quants import disable_observer
from mmrazor_quant.models.observers.histogram import HistogramMSEObserver
from mmrazor_quant.registry import MODELS
from ..int8_host import int8_weight_bits
from ..test_models.test_quantizers.test_positions import qconfig
from .test_openvino_placement import UNSIGNED, _runtime_layers

ov = pytest.importorskip('openvino')

U8_ASYM = dict(UNSIGNED, is_symmetry=False)
HIST_MSE = dict(type='mmrazor_quant.HistogramMSEObserver')


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


def _model(data, tolerance, a_qscheme=U8_ASYM):
    """Calibrated on ``data`` with histogram MSE activation ranges."""
    torch.manual_seed(1)
    global_qconfig = dict(qconfig(a_qscheme), a_observer=HIST_MSE)
    global_qconfig['w_qscheme'] = dict(global_qconfig['w_qscheme'],
                                       bit=int8_weight_bits())
    model = MODELS.build(
        dict(
            type='mmrazor_quant.MMArchitectureQuant',
            architecture=DepthwiseBlockNet().eval(),
            forward_modes=('tensor', ),
            quantizer=dict(
                type='mmrazor_quant.OpenVINOQuantizer',
                global_qconfig=global_qconfig,
                depthwise_symmetric_tolerance=tolerance))).eval()
    with torch.no_grad():
        model(data, mode='tensor')
    disable_observer(model)
    return model


def test_depthwise_input_takes_the_cheapest_grid_within_tolerance(data):
    """Any tolerance: the depthwise conv's input gets the zero-point-free
    grid with the smaller histogram error (here the signed one: Hardswish
    reaches -0.375, so the unsigned grid clips a tail); tolerance 0: the
    asymmetric grid, which is better; the pointwise conv's input keeps the
    asymmetric grid either way."""
    plain = _input_fake_quants(_model(data, None))
    for tolerance, signed in ((1e9, True), (0.0, False)):
        found = _input_fake_quants(_model(data, tolerance))
        dw, pw = found['dw'], found['pw']
        assert dw is not pw and 'depthwise' in dw.name
        errors = dw.observer.grid_errors
        assert errors['asymmetric'] < errors['signed'] < errors['unsigned']
        if signed:
            assert int(dw.zero_point) == 128
            # the signed grid is the symmetric scheme's own best range
            symmetric = HistogramMSEObserver(
                dw.qscheme.replace(is_symmetry=True))
            symmetric.histogram.copy_(dw.observer.histogram)
            for key in ('hist_min', 'hist_max', 'min_val', 'max_val'):
                getattr(symmetric, key).copy_(getattr(dw.observer, key))
            scale, zero_point = symmetric.calculate_qparams()
            assert int(zero_point) == 128
            assert float(dw.scale) == pytest.approx(float(scale), rel=1e-5)
        else:
            assert float(dw.scale) == float(plain['dw'].scale)
            assert int(dw.zero_point) == int(plain['dw'].zero_point) > 0
        # its own asymmetric range (its input follows the dw conv's grid)
        assert 'depthwise' not in pw.name and not hasattr(
            pw.observer, 'grid_errors')
        assert int(pw.zero_point) > 0 and int(plain['pw'].zero_point) > 0


def test_no_rule_with_symmetric_activations(data):
    """With symmetric activations there is nothing to change: the
    depthwise conv's fake quant is the global one."""
    found = _input_fake_quants(
        _model(data, 1e9, dict(UNSIGNED, is_symmetry=True)))
    assert all(fq.qscheme.is_symmetry for fq in found.values())
    assert not any('depthwise' in fq.name for fq in found.values())


def test_depthwise_conv_runs_without_zero_point(data, tmp_path):
    """In OpenVINO the depthwise conv runs i8 on the signed grid and u8 (a
    source zero-point) on the asymmetric one; the pointwise conv is u8
    either way; the export agrees with the simulation."""
    if int8_weight_bits() < 8:
        pytest.skip('int8 kernel precisions were checked on a CPU with VNNI')
    precisions = {}
    for tolerance in (1e9, None):
        model = _model(data, tolerance)
        path = str(tmp_path / f'model_{tolerance}.onnx')
        result = export_model(model, data[:2], path, 'openvino')
        report = check_parity(result.deploy_model, path, data,
                              runtime='openvino')
        assert report.sqnr_db >= 35, report.format()
        precisions[tolerance] = {
            names.split('/')[1]: prec
            for kind, prec, names in _runtime_layers(path)
            if kind == 'Convolution'
        }
    assert precisions[1e9]['dw'] == 'i8'
    assert precisions[None]['dw'] == 'u8'
    assert precisions[1e9]['pw'] == precisions[None]['pw'] == 'u8'
