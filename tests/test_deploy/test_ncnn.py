"""ncnn: the int8 ``.param``/``.bin`` carries the model's scales (inverted,
as ncnn stores them), ncnn's runtime follows the simulation of its
arithmetic, and bad input is refused before anything is written."""
import copy
import os
import struct
import sys

import numpy as np
import pytest
import torch
from torch import nn

from mmrazor_quant.deploy import WeightQuantizedLayer, export_model
from mmrazor_quant.deploy.ncnn import (
    NCNNExportError,
    float2int8,
    ncnn_deploy_model,
)
from mmrazor_quant.deploy.ncnn.model_writer import INT8_TAG
from mmrazor_quant.deploy.parity import (
    check_parity,
    output_step,
    run_parity,
)
from mmrazor_quant.deploy.runtimes import load_runtime
from mmrazor_quant.models.fake_quants import (
    LearnableFakeQuantize,
    round_half_away_from_zero,
)
from mmrazor_quant.utils.sqnr import sqnr_db
from .conftest import (
    LSQ,
    RESNET,
    U8,
    _train,
    build_quantized,
    calibrate,
    lsq_finetune,
)

ncnn = pytest.importorskip('ncnn', reason='ncnn is not installed: run '
                           '`make ncnn`')

#: ncnn's activation grid: symmetric int8 on [-127, 127].
S8_SYM = dict(qdtype='qint8', bit=8, is_symmetry=True,
              is_symmetric_range=True)


@pytest.fixture(scope='module')
def resnet_weights(digits):
    """The tiny ResNet's fp32 weights (30 SGD steps on digits)."""
    return dict(resnet=_train(RESNET, digits[0], digits[1]))


@pytest.fixture(scope='module')
def ptq(resnet_weights, digits):
    """The tiny ResNet, ncnn W8A8 PTQ."""
    return calibrate(build_quantized('resnet', resnet_weights,
                                     'NCNNQuantizer', S8_SYM), digits[0])


@pytest.fixture(scope='module')
def lsq(resnet_weights, digits):
    """The tiny ResNet after a short LSQ run (scales trained)."""
    model = build_quantized('resnet', resnet_weights, 'NCNNQuantizer',
                            S8_SYM, **LSQ)
    torch.manual_seed(0)
    return lsq_finetune(model, digits[0], digits[1])


def read_int8_layers(stem):
    """``{layer: (weight codes, weight multipliers, input multiplier)}``
    read back from the ``.bin`` by walking the ``.param``."""
    with open(stem + '.param') as f:
        lines = f.read().split('\n')[2:]
    with open(stem + '.bin', 'rb') as f:
        data = f.read()
    pos, found = 0, {}
    for line in filter(None, lines):
        parts = line.split()
        params = dict(p.split('=') for p in parts[4 + int(parts[2]) +
                                                  int(parts[3]):])
        if parts[0] not in ('Convolution', 'ConvolutionDepthWise',
                            'InnerProduct'):
            continue
        size_key = '2' if parts[0] == 'InnerProduct' else '6'
        bias_key = '1' if parts[0] == 'InnerProduct' else '5'
        n_out, size = int(params['0']), int(params[size_key])
        int8 = params.get('8') == '1'
        tag = struct.unpack_from('<I', data, pos)[0]
        pos += 4
        if int8:
            assert tag == INT8_TAG
            codes = np.frombuffer(data, np.int8, size, pos)
            pos += size + (-size) % 4
        else:
            pos += 4 * size
        if params.get(bias_key) == '1':
            pos += 4 * n_out
        if int8:
            w_scales = np.frombuffer(data, '<f4', n_out, pos)
            in_scale = np.frombuffer(data, '<f4', 1, pos + 4 * n_out)
            pos += 4 * n_out + 4
            found[parts[1]] = (codes, w_scales, in_scale[0])
    assert pos == len(data)
    return found


def int8_layers(deploy):
    return {name: m for name, m in deploy.named_modules()
            if type(m).__name__ == 'NCNNInt8Layer'}


@pytest.mark.slow
@pytest.mark.parametrize('arch', ['resnet', 'mbv2'])
def test_parity(float_weights, digits, tmp_path, arch):
    """ncnn runs the file as the simulation of its arithmetic computes:
    the same top-1 on 1000 test digits, at least 99.9 % agreement and
    45 dB."""
    model = calibrate(build_quantized(arch, float_weights, 'NCNNQuantizer',
                                      S8_SYM), digits[0])
    result = export_model(model, digits[2][:2], str(tmp_path / 'm.onnx'),
                          'ncnn')
    report = check_parity(result.deploy_model, result.onnx_path,
                          digits[2], 'ncnn', labels=digits[3],
                          packing=False)
    assert report.agreement >= 0.999
    assert abs(report.sim_accuracy - report.runtime_accuracy) <= 0.002
    assert report.sqnr_db >= 45, report.format()


def test_files_carry_the_model_scales(ptq, digits, tmp_path):
    """Every int8 layer holds the weight codes of the simulation, 1/s_w
    per channel and 1/s_in as float32, bit for bit; the table holds the
    same values; the float32 graph has the same layer names."""
    model = ptq
    result = export_model(model, digits[2][:2], str(tmp_path / 'r.onnx'),
                          'ncnn')
    assert sorted(result.files) == ['bin', 'fp32_bin', 'fp32_param',
                                    'param', 'qparams', 'table']
    layers = read_int8_layers(str(tmp_path / 'r'))
    sims = int8_layers(ncnn_deploy_model(result.deploy_model))
    assert len(layers) == len(sims) == 21  # 20 convs and the head
    table = {}
    with open(result.files['table']) as f:
        for line in f:
            key, *values = line.split()
            table[key] = np.array(values, dtype=np.float32)
    for name, (codes, w_scales, in_scale) in layers.items():
        sim = sims[name]
        assert np.array_equal(codes, sim.weight_codes.reshape(-1).numpy())
        deploy_layer = _deploy_layer(model, name)
        expected = torch.reciprocal(deploy_layer.weight_fake_quant.scale)
        assert w_scales.tobytes() == expected.numpy().tobytes()
        assert in_scale == sim.in_multiplier.numpy()[0]
        assert table[f'{name}_param_0'].tobytes() == w_scales.tobytes()
        assert table[name][0] == in_scale
    with open(result.files['fp32_param']) as f:
        fp32_names = {line.split()[1] for line in f.read().split('\n')[2:]
                      if line}
    assert set(layers) <= fp32_names


def _deploy_layer(qmodel, name) -> WeightQuantizedLayer:
    from mmrazor_quant.deploy import build_deploy_model
    return build_deploy_model(qmodel).get_submodule(name)


@pytest.mark.slow
def test_lsq_scales_land_in_the_bin(lsq, digits, tmp_path):
    """QAT to the device: the scales LSQ learned are in the ``.bin``
    (inverted) bit for bit, and ncnn follows the simulation."""
    fake_quants = [m for m in lsq.modules()
                   if isinstance(m, LearnableFakeQuantize)]
    assert fake_quants
    result = export_model(lsq, digits[2][:2], str(tmp_path / 'l.onnx'),
                          'ncnn')
    layers = read_int8_layers(str(tmp_path / 'l'))
    learned_w = {torch.reciprocal(fq.scale.detach().reshape(-1)).numpy()
                 .tobytes() for fq in fake_quants if fq.scale.numel() > 1}
    learned_in = {torch.reciprocal(fq.scale.detach().reshape(-1)).numpy()
                  .tobytes() for fq in fake_quants if fq.scale.numel() == 1}
    for codes, w_scales, in_scale in layers.values():
        assert w_scales.tobytes() in learned_w
        assert np.float32(in_scale).reshape(1).tobytes() in learned_in
    report = check_parity(result.deploy_model, result.onnx_path,
                          digits[2][:500], 'ncnn', labels=digits[3][:500],
                          packing=False)
    assert report.agreement >= 0.999 and report.sqnr_db >= 45


def test_runtime_plugin_declares_and_simulates_ncnns_arithmetic(
        ptq, digits, tmp_path):
    """The ncnn runtime plugin declares its arithmetic (the float32
    reciprocal of the scale, exact int32 sums, no saturating u8 x s8
    kernels), and its simulation turns the deploy model into ncnn's int8
    layers: the parity pipeline gives the same figures for the deploy model
    the export wrote as for ncnn's simulation of it."""
    from mmrazor_quant.deploy import build_deploy_model, get_runtime
    runtime = get_runtime('ncnn')
    assert (runtime.quantizes_by, runtime.accumulates_exactly) == (
        'multiplication', True)
    assert not runtime.int8_saturates(packing=False)
    result = export_model(ptq, digits[2][:2], str(tmp_path / 'p.onnx'),
                          'ncnn')
    x = digits[2][:64]
    exported = run_parity(result.deploy_model, result.onnx_path, x, 'ncnn',
                          packing=False)
    simulated = run_parity(ncnn_deploy_model(build_deploy_model(ptq)),
                           result.onnx_path, x, 'ncnn', packing=False)
    assert (exported.sqnr_db, exported.max_abs_diff, exported.agreement) \
        == (simulated.sqnr_db, simulated.max_abs_diff, simulated.agreement)
    assert exported.agreement == 1.0 and exported.sqnr_db >= 45
    # in steps of the head's input grid, as for every other runtime
    assert exported.output_step == output_step(result.deploy_model) < 1


def test_perturbed_scale_moves_the_runtime_as_the_simulation(
        ptq, digits, tmp_path):
    """One input scale in the middle of the network cut to a quarter: ncnn's
    outputs move as the simulation's do, so the file runs on the model's
    scale."""
    x = digits[2][:64]
    runs = []
    for factor in (1.0, 0.25):
        model = copy.deepcopy(ptq)
        fake_quants = list(model.architecture.act_fake_quants.values())
        fake_quants[len(fake_quants) // 2].scale.data *= factor
        path = str(tmp_path / f'x{factor}.onnx')
        result = export_model(model, x[:2], path, 'ncnn')
        with torch.no_grad():
            sim = ncnn_deploy_model(result.deploy_model)(x).numpy()
        runs.append((sim, load_runtime('ncnn', path)(x.numpy())))
    (sim0, rt0), (sim1, rt1) = runs
    # the scale matters: the logits move by a fifth of their range
    assert np.abs(sim1 - sim0).max() > 0.2 * np.abs(sim0).max()
    assert sqnr_db(sim1 - sim0, rt1 - rt0) > 40


class _OneConv(nn.Module):
    """A 1x1 conv with weight 1: its output is its quantized input."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(1, 1, 1, bias=False)
        nn.init.ones_(self.conv.weight)

    def forward(self, inputs, data_samples=None, mode='tensor'):
        return self.conv(inputs)


def test_ties_round_away_from_zero(tmp_path):
    """Inputs exactly half-way between two steps: ncnn, the simulation and
    the fake quant round them away from zero (half to even would give
    0, 2, 2, 4 for 0.5, 1.5, 2.5, 3.5)."""
    from mmrazor_quant.analysis.model_check import (
        calibrate_and_freeze,
        quantize_w8a8,
    )
    qmodel = quantize_w8a8(_OneConv(), 'ncnn', (1, 4, 4), ('tensor', ))
    calibrate_and_freeze(qmodel, [torch.linspace(-8, 8, 16).reshape(
        1, 1, 4, 4)])
    fq = qmodel.architecture.act_fake_quants['inputs']
    fq.scale.data.fill_(0.0625)  # a power of two: x * 16 is exact
    halves = torch.arange(-3.5, 4.0, 1.0)  # -3.5 ... 3.5
    x = (halves * 0.0625).reshape(1, 1, 2, 4)
    expected = round_half_away_from_zero(halves) * 0.0625
    assert expected.tolist()[-4:] == [0.0625, 0.125, 0.1875, 0.25]
    with torch.no_grad():
        assert torch.equal(qmodel(x, mode='tensor').reshape(-1), expected)
    result = export_model(qmodel, x, str(tmp_path / 't.onnx'), 'ncnn')
    with torch.no_grad():
        sim = ncnn_deploy_model(result.deploy_model)(x).reshape(-1)
    out = load_runtime('ncnn', result.onnx_path)(x.numpy()).reshape(-1)
    assert torch.equal(sim, expected)
    assert np.array_equal(out, expected.numpy())


def test_float2int8_is_ncnns_simd_rounding():
    v = torch.tensor([0.5, -0.5, 1.5, -2.5, 0.49999997, 126.6, -300.0])
    assert float2int8(v).tolist() == [1, -1, 2, -3, 1, 127, -127]


# -- bad input: a clear error, nothing written ------------------------------
def _nothing_written(tmp_path):
    return os.listdir(tmp_path) == []


def test_refuses_a_model_quantized_for_another_backend(
        resnet_weights, digits, tmp_path):
    model = calibrate(build_quantized('resnet', resnet_weights,
                                      'OpenVINOQuantizer', U8), digits[0])
    with pytest.raises(ValueError, match='OpenVINOQuantizer.*NCNNQuantizer'):
        export_model(model, digits[2][:2], str(tmp_path / 'o.onnx'), 'ncnn')
    assert _nothing_written(tmp_path)


def test_refuses_asymmetric_activations(resnet_weights, digits,
                                        tmp_path):
    with pytest.raises(ValueError, match='a_qscheme.is_symmetry must be '
                       'True'):
        build_quantized('resnet', resnet_weights, 'NCNNQuantizer',
                        dict(qdtype='qint8', bit=8, is_symmetry=False))
    # a model of no particular target (academic) with asymmetric inputs
    model = calibrate(build_quantized(
        'resnet', resnet_weights, 'AcademicQuantizer',
        dict(qdtype='qint8', bit=8, is_symmetry=False)), digits[0])
    # NCNNQuantizer's BackendSpec, the one source of ncnn's scheme, names
    # each fake quant and the key it breaks
    with pytest.raises(ValueError, match=r'(?s)ncnn does not execute the '
                       r'scheme.*a_qscheme\.is_symmetry must be True'):
        export_model(model, digits[2][:2], str(tmp_path / 'a.onnx'), 'ncnn')
    assert _nothing_written(tmp_path)


class _WithGELU(nn.Module):

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(1, 4, 3)
        self.act = nn.GELU()
        self.head = nn.Linear(4 * 2 * 2, 3)

    def forward(self, inputs, data_samples=None, mode='tensor'):
        return self.head(self.act(self.conv(inputs)).flatten(1))


def test_refuses_an_op_ncnn_cannot_run_naming_the_layer(tmp_path):
    from mmrazor_quant.analysis.model_check import (
        calibrate_and_freeze,
        quantize_w8a8,
    )
    qmodel = quantize_w8a8(_WithGELU(), 'ncnn', (1, 4, 4), ('tensor', ))
    calibrate_and_freeze(qmodel, [torch.randn(4, 1, 4, 4)])
    with pytest.raises(NCNNExportError, match=r'layer act \(GELU\)'):
        export_model(qmodel, torch.randn(2, 1, 4, 4),
                     str(tmp_path / 'g.onnx'), 'ncnn')
    assert _nothing_written(tmp_path)


def test_missing_runtime_is_a_clear_error(ptq, digits, tmp_path,
                                          monkeypatch):
    monkeypatch.setitem(sys.modules, 'ncnn', None)
    with pytest.raises(ImportError, match='make ncnn'):
        export_model(ptq, digits[2][:2], str(tmp_path / 'm.onnx'),
                     'ncnn')
    with pytest.raises(ImportError, match='make ncnn'):
        load_runtime('ncnn', str(tmp_path / 'm.param'))
    assert _nothing_written(tmp_path)


def test_table_and_fp32_graph_give_the_int8_weights(ptq, digits, tmp_path):
    """What ``ncnn2int8`` does with the ``.table``: each float32 weight of
    ``<stem>_fp32.bin`` times its ``<layer>_param_0`` scale, rounded by
    ncnn's ``float2int8``, is the int8 code in ``<stem>.bin``."""
    from mmrazor_quant.deploy import build_deploy_model
    from mmrazor_quant.deploy.ncnn import build_ncnn_model
    result = export_model(ptq, digits[2][:2],
                          str(tmp_path / 'm.onnx'), 'ncnn')
    layers = read_int8_layers(str(tmp_path / 'm'))
    fp32 = build_ncnn_model(build_deploy_model(ptq), (3, 28, 28),
                            int8=False)
    table = {}
    with open(result.files['table']) as f:
        for line in f:
            key, *values = line.split()
            table[key] = torch.tensor(np.array(values, dtype=np.float32))
    checked = 0
    for layer in fp32.layers:
        if layer.name not in layers:
            continue
        weights = np.frombuffer(layer.weights[0][4:], '<f4')
        scales = table[f'{layer.name}_param_0']
        w = torch.from_numpy(weights.copy()).reshape(len(scales), -1)
        codes = float2int8(w * scales[:, None]).reshape(-1)
        assert np.array_equal(codes.numpy(), layers[layer.name][0])
        checked += 1
    assert checked == len(layers) == 21  # 20 convs and the head
