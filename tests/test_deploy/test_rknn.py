"""RKNN: RKNNQuantizer's model exported as QDQ ONNX, built into a ``.rknn``
by rknn-toolkit2 (its own venv, ``make rknn-env``) with our qparams, and
checked in the toolkit's x86 simulator against the simulation.

The toolkit tests skip only when ``.venv-rknn`` is not built (``make test``
builds it first); the error tests that stop before the toolkit run
everywhere.
"""
import copy
import os

import numpy as np
import pytest
import torch

from mmrazor_quant.deploy import (
    build_exporter,
    compare_outputs,
    export_model,
)
from mmrazor_quant.deploy.external_env import ExternalEnv, ToolchainMissing
from mmrazor_quant.deploy.int32_bias import align_bias_to_int32_grid_
from mmrazor_quant.deploy.parity import output_step
from mmrazor_quant.deploy.rknn.simulator import RKNN_ENV, build_rknn
from mmrazor_quant.deploy.rknn.weight_grid import fit_weights_to_rknn_grid_
from mmrazor_quant.deploy.runtimes import load_runtime
from mmrazor_quant.models.qat_modules import is_qat_module
from mmrazor_quant.registry import MODELS
from ..skips import CLS_HEAD_SKIPS
from ..train_utils import train_steps
from .conftest import calibrate

needs_rknn = pytest.mark.skipif(
    not RKNN_ENV.available(),
    reason=f'RKNN toolchain not built ({RKNN_ENV.path} missing): run `make '
    'rknn-env` (`make test` builds it)')

W8 = dict(qdtype='qint8', bit=8, is_symmetry=True, is_symmetric_range=True)
#: RKNN's activations: int8, asymmetric.
A8 = dict(qdtype='qint8', bit=8, is_symmetry=False)
#: Parity on the toy below, measured with rknn-toolkit2 2.5.0: 59.2 dB and
#: 100 % top-1 (the toolkit runs our integers; what is left is float32
#: noise at near-ties); the bounds leave a margin below that.
MIN_SQNR_DB = 45.0
MIN_TOP1_AGREEMENT = 0.99


def _toy(width: int = 16) -> dict:
    """ResNet_CIFAR's stem and first two stages (residual adds, global
    average pooling, linear head): small enough to train in seconds."""
    return dict(
        _scope_='mmcls',
        type='ImageClassifier',
        backbone=dict(type='ResNet_CIFAR', depth=18, num_stages=2,
                      strides=(1, 2), dilations=(1, 1), out_indices=(1, ),
                      stem_channels=width, base_channels=width),
        neck=dict(type='GlobalAveragePooling'),
        head=dict(type='LinearClsHead', num_classes=10,
                  in_channels=2 * width))


def _quantized(architecture, quantizer: str = 'RKNNQuantizer',
               a_qscheme: dict = A8):
    return MODELS.build(
        dict(
            type='mmrazor_quant.MMArchitectureQuant',
            architecture=architecture,
            forward_modes=('tensor', ),
            quantizer=dict(
                type=f'mmrazor_quant.{quantizer}',
                global_qconfig=dict(
                    w_observer=dict(
                        type='mmrazor_quant.PerChannelMinMaxObserver'),
                    a_observer=dict(type='mmrazor_quant.MinMaxObserver'),
                    w_fake_quant=dict(type='mmrazor_quant.FakeQuantize'),
                    a_fake_quant=dict(type='mmrazor_quant.FakeQuantize'),
                    w_qscheme=W8,
                    a_qscheme=a_qscheme),
                tracer=dict(
                    type='mmrazor_quant.CustomTracer',
                    skipped_methods=CLS_HEAD_SKIPS))))


@pytest.fixture(scope='module')
def toy_fp32(digits):
    torch.manual_seed(0)
    model = MODELS.build(_toy())
    train_steps(model, digits[0], digits[1], 60,
                torch.optim.AdamW(model.parameters(), lr=1e-2))
    return model.eval()


@pytest.fixture(scope='module')
def toy_rknn(toy_fp32, digits):
    """The toy quantized for RKNN and calibrated, with the int32 biases of
    the NPU's convolutions (the exporter's ``prepare_model``)."""
    model = calibrate(_quantized(copy.deepcopy(toy_fp32)), digits[0])
    build_exporter('rknn').prepare_model(model)
    return model


@pytest.fixture(scope='module')
def exported(toy_rknn, digits, tmp_path_factory):
    """One export and one simulator run (256 test digits) for the module:
    the export, the simulator's outputs and the parity report."""
    if not RKNN_ENV.available():
        pytest.skip(needs_rknn.kwargs['reason'])
    out = str(tmp_path_factory.mktemp('rknn') / 'toy.onnx')
    result = export_model(toy_rknn, digits[2][:2], out, backend='rknn')
    x = digits[2][:256]
    _, outputs = build_rknn(out, (1, ) + tuple(x.shape[1:]),
                            inputs=x.numpy())
    with torch.no_grad():
        sim = result.deploy_model(x).numpy()
    report = compare_outputs(sim, outputs, 'rknn_simulator',
                             output_step(result.deploy_model),
                             digits[3][:256].numpy())
    return result, outputs, report


@needs_rknn
def test_rknn_simulator_runtime_is_the_parity_runtime(exported, digits):
    """The registered runtime the tools' parity check loads builds the same
    model: the same outputs on the same digits, bit for bit."""
    result, outputs, _ = exported
    run = load_runtime('rknn_simulator', result.files['onnx'])
    np.testing.assert_array_equal(run(digits[2][:8].numpy()), outputs[:8])


@needs_rknn
def test_rknn_parity_with_simulation(exported):
    result, _, report = exported
    assert set(result.files) == {'onnx', 'qparams', 'rknn'}
    assert os.path.getsize(result.files['rknn']) > 1000
    assert report.runtime == 'rknn_simulator'
    assert report.sqnr_db >= MIN_SQNR_DB, report.format()
    assert report.agreement >= MIN_TOP1_AGREEMENT, report.format()
    assert abs(report.sim_accuracy - report.runtime_accuracy) <= 0.02
    # Far from chance, so the agreement above is not one of near-ties.
    assert report.sim_accuracy >= 0.5


def test_rknn_placement_follows_the_toolkits_fusions(toy_fp32):
    """Outputs are quantized after the fused ReLU; the conv a residual add
    is fused into (``ConvAdd``: ``conv2``, not the downsample conv) keeps
    its int32 result, the add's output is quantized."""
    model = _quantized(copy.deepcopy(toy_fp32))
    names = set(model.architecture.act_fake_quants.keys())
    assert {'inputs', 'backbone_conv1', 'backbone_layer1_0_conv1',
            'backbone_layer1_0_relu', 'backbone_layer2_0_downsample_0',
            'head_fc'} <= names
    assert not {n for n in names if n.endswith('_conv2')}, names


def _weight_integers(model):
    """Each quantized layer's weight integers and scales."""
    out = {}
    for name, module in model.named_modules():
        if is_qat_module(module):
            fq = module.weight_fake_quant
            scale = fq.get_qparams()[0]
            folded = module.get_folded_weight_bias()[0]
            out[name] = (torch.round(
                folded / scale.reshape(-1, *[1] * (folded.dim() - 1))),
                         scale)
    return out


def test_rknn_prepare_keeps_weights_a_rknn_holds(toy_fp32, digits):
    """Min-max weights reach +127, which a .rknn cannot hold: the
    channels with one get a scale < 0.5 % larger, and every weight rounds
    into [-127, 126]; the other channels keep theirs."""
    model = calibrate(_quantized(copy.deepcopy(toy_fp32)), digits[0])
    before = _weight_integers(model)
    assert sum(int((q == 127).sum()) for q, _ in before.values()) > 10
    grown = fit_weights_to_rknn_grid_(model)
    after = _weight_integers(model)
    assert grown == sum(int((q == 127).any(dim=tuple(range(1, q.dim())))
                            .sum()) for q, _ in before.values())
    for name, (q, scale) in after.items():
        assert q.min() >= -127 and q.max() <= 126, name
        ratio = scale / before[name][1]
        assert ratio.min() >= 1 and ratio.max() < 1.005, name
    assert fit_weights_to_rknn_grid_(model) == 0


def test_rknn_prepare_aligns_the_head_bias_behind_a_view(toy_fp32, digits):
    """The linear head reads the pooled features through a ``view``: the
    default alignment skips it, the RKNN one (the toolkit rounds every
    bias) puts it on ``s_in * s_w`` too."""
    model = calibrate(_quantized(copy.deepcopy(toy_fp32)), digits[0])
    skipped = align_bias_to_int32_grid_(copy.deepcopy(model)).skipped
    assert skipped == {'head.fc': 'input not quantized by a fake quant'}
    build_exporter('rknn').prepare_model(model)
    # Aligned again, nothing moves beyond float rounding (an unaligned bias
    # is up to half a step off).
    again = align_bias_to_int32_grid_(model, through_reshapes=True)
    assert 'head.fc' in again.layers and again.max_grid_steps < 0.01


def _act_fake_quant(model, name: str):
    for key, module in model.named_modules():
        if key.endswith(name) and hasattr(module, 'scale'):
            return module
    raise KeyError(name)


@needs_rknn
def test_rknn_carries_our_qparams(exported, toy_rknn, digits, tmp_path):
    """One activation scale (the stem's output) x0.25 in our model, which
    clips its larger values, exported again: the simulator's output moves
    as the simulation's does."""
    result, outputs, _ = exported
    x = digits[2][:64]
    perturbed = copy.deepcopy(toy_rknn)
    fq = _act_fake_quant(perturbed, 'act_fake_quants.backbone_conv1')
    fq.scale.mul_(0.25)
    # The consumers' biases follow the new input scale onto their grid.
    build_exporter('rknn').prepare_model(perturbed)
    out = str(tmp_path / 'perturbed.onnx')
    moved = export_model(perturbed, x[:2], out, backend='rknn')
    with torch.no_grad():
        sim0 = result.deploy_model(x).numpy()
        sim1 = moved.deploy_model(x).numpy()
    shape = (1, ) + tuple(x.shape[1:])
    rt0 = outputs[:64]
    _, rt1 = build_rknn(out, shape, inputs=x.numpy())
    sim_move, rt_move = sim1 - sim0, rt1 - rt0
    step = float(np.abs(np.diff(np.unique(sim0))).min())
    # The perturbation is large (many output steps) ...
    assert np.abs(sim_move).mean() > 3 * step
    # ... and the simulator follows it: the difference between the two
    # moves is within the simulator's own noise, and much smaller than the
    # move itself.
    err = rt_move - sim_move
    # Measured: 52.6 dB, correlation 0.999997 (1 of 640 outputs a step
    # apart), energy ratio 0.9998.
    assert 10 * np.log10((sim_move**2).sum() / (err**2).sum()) >= 40
    assert np.corrcoef(sim_move.ravel(), rt_move.ravel())[0, 1] > 0.9999
    assert 0.99 < (rt_move**2).sum() / (sim_move**2).sum() < 1.01


def test_rknn_refuses_other_backends_model(toy_fp32, digits, tmp_path):
    """A model quantized for OpenVINO (u8 activations on its input
    placement) is refused before anything runs or is written."""
    model = calibrate(
        _quantized(copy.deepcopy(toy_fp32), 'OpenVINOQuantizer',
                   dict(qdtype='quint8', bit=8, is_symmetry=True)),
        digits[0], batches=1)
    out = tmp_path / 'ov.onnx'
    with pytest.raises(ValueError, match='rknn cannot deploy a model '
                       'quantized by OpenVINOQuantizer .backend .openvino.'):
        export_model(model, digits[2][:2], str(out), backend='rknn')
    assert os.listdir(tmp_path) == []


@needs_rknn
def test_rknn_refuses_unsigned_activations(toy_fp32, digits, tmp_path):
    """The native quantizer deploys anywhere, but its u8 activations are
    not the NPU's int8: each fake quant is named."""
    model = calibrate(
        _quantized(copy.deepcopy(toy_fp32), 'TorchNativeQuantizer',
                   dict(qdtype='quint8', bit=8, is_symmetry=False)),
        digits[0], batches=1)
    with pytest.raises(ValueError, match=r'(?s)rknn does not execute the '
                       r'scheme.*: a_qscheme.qdtype must be '
                       r"one of \('qint8',\), got 'quint8'"):
        export_model(model, digits[2][:2], str(tmp_path / 'n.onnx'),
                     backend='rknn')
    assert os.listdir(tmp_path) == []


@needs_rknn
def test_rknn_names_the_float_op(digits, tmp_path):
    """ConvMixer's GELU (and the BN after it) have no int8 placement in
    RKNNQuantizer: the export names the op and its layer, before the
    toolkit would fail with ``Invalid w_par['dtype'] = float16``."""
    torch.manual_seed(0)
    arch = MODELS.build(
        dict(_scope_='mmcls', type='ImageClassifier',
             backbone=dict(type='ConvMixer', arch=dict(
                 embed_dims=16, depth=1, patch_size=7, kernel_size=3)),
             neck=dict(type='GlobalAveragePooling'),
             head=dict(type='LinearClsHead', num_classes=10,
                       in_channels=16))).eval()
    model = calibrate(_quantized(arch), digits[0], batches=1)
    with pytest.raises(ValueError, match=r"(?s)rknn: \d+ op\(s\) would run "
                       r"in float.*Erf '/act/Erf' \(layer 'act'\).*"
                       r"BatchNormalization '/stem.2/BatchNormalization' "
                       r"\(layer 'stem.2'\)"):
        export_model(model, digits[2][:2], str(tmp_path / 'g.onnx'),
                     backend='rknn')
    assert os.listdir(tmp_path) == []


def test_rknn_missing_toolchain(toy_rknn, digits, tmp_path, monkeypatch):
    """Without the venv: one clear error saying how to build it, and no
    file written."""
    monkeypatch.setenv('MMRAZOR_QUANT_RKNN_VENV', str(tmp_path / 'none'))
    out = tmp_path / 'out'
    with pytest.raises(ToolchainMissing, match=r'RKNN toolchain not found: '
                       r'run `make rknn-env`'):
        export_model(toy_rknn, digits[2][:2], str(out / 'toy.onnx'),
                     backend='rknn')
    assert not out.exists()
    with pytest.raises(ToolchainMissing, match='make rknn-env'):
        load_runtime('rknn_simulator', str(out / 'toy.onnx'))


def test_external_env_needs_a_complete_venv(tmp_path, monkeypatch):
    """A venv without its stamp (an interrupted ``make``) is not used."""
    venv = tmp_path / 'venv'
    (venv / 'bin').mkdir(parents=True)
    (venv / 'bin' / 'python').write_text('')
    env = ExternalEnv('X', 'unused', 'x-env', 'MMRQ_TEST_X_VENV')
    monkeypatch.setenv('MMRQ_TEST_X_VENV', str(venv))
    assert not env.available()
    with pytest.raises(ToolchainMissing, match='X toolchain not found: run '
                       '`make x-env`'):
        env.python
    (venv / '.installed').write_text('')
    assert env.available()
