"""Exported pose estimators (QDQ ONNX ending at the head's raw outputs) vs
the simulation, in onnxruntime and OpenVINO, on real keypoint digits."""
import onnx
import pytest
import torch

from mmrazor_quant.deploy import deploy_head_of, export_model
from mmrazor_quant.deploy.pose import PoseDeployHead
from mmrazor_quant.deploy.runtimes import load_runtime
from mmrazor_quant.deploy.tensor_parity import tensor_parity
from mmrazor_quant.utils.sqnr import sqnr_db
from ..int8_host import int8_weight_bits

CASES = [('rtmpose', 'openvino'), ('rtmpose', 'tensorrt'),
         ('simplebaseline', 'openvino')]
# Lowest head-output SQNR asserted (measured on a VNNI CPU: RTMPose 48.7 to
# 53.4 dB, SimpleBaseline 110 dB and more).
MIN_SQNR = {'rtmpose': 45., 'simplebaseline': 60.}


@pytest.fixture(scope='module')
def exported(digits_batch, calibrated, tmp_path_factory):
    """Each tiny model calibrated on the 16 digits and exported per backend
    (OpenVINO's weights on 7 bits where this CPU's int8 kernels saturate)."""
    inputs = digits_batch['inputs']
    out = {}
    for arch, backend in CASES:
        bits = int8_weight_bits() if backend == 'openvino' else 8
        model = calibrated(arch, backend, bits)
        path = str(tmp_path_factory.mktemp(arch) / f'{backend}.onnx')
        result = export_model(model, inputs[:1], path, backend=backend)
        out[arch, backend] = (model, path, result.deploy_model)
    return out


@pytest.mark.parametrize('arch,backend', CASES)
@pytest.mark.parametrize('runtime', ['onnxruntime', 'openvino'])
def test_head_outputs_and_keypoints_match_simulation(arch, backend, runtime,
                                                     exported, digits_batch):
    model, path, deploy = exported[arch, backend]
    report = PoseDeployHead().check_parity(model, deploy, path,
                                           digits_batch['inputs'], [],
                                           runtime)
    assert report.num_samples == 16
    assert report.sqnr_db > MIN_SQNR[arch], report.format()
    # the random heads' outputs are nearly flat: an arg-max tie may move a
    # keypoint, but nearly all decode to the same place
    assert report.agreement >= 0.9, report.format()
    assert report.details["mean_keypoint_px"] <= 0.5, report.format()


def test_pose_models_get_the_pose_deploy_head(exported):
    model, _, _ = exported['rtmpose', 'openvino']
    assert isinstance(deploy_head_of(model), PoseDeployHead)


@pytest.mark.parametrize('backend', ['openvino', 'tensorrt'])
@pytest.mark.parametrize('runtime', ['onnxruntime', 'openvino'])
def test_simcc_head_alone_matches_simulation(backend, runtime, exported,
                                             digits_batch, tmp_path):
    """The exported SimCC head, from the quantized ScaleNorm output (the
    2x2 SimCC input, four values per keypoint) to both vectors, fed the
    simulation's own values there: whatever a runtime's whole-model figure
    loses enters before the head."""
    model, path, _ = exported['rtmpose', backend]
    deploy = model.get_deploy_model().eval()
    seen = {}
    deploy.get_submodule('act_fake_quants.head_mlp_0_mul_1') \
        .register_forward_hook(lambda m, i, o: seen.setdefault('x', o))
    with torch.no_grad():
        sim = deploy(digits_batch['inputs'].float())
    graph = onnx.load(path).graph
    quant = next(n for n in graph.node if n.op_type == 'QuantizeLinear' and
                 n.input[1] == 'act_fake_quants.head_mlp_0_mul_1.scale')
    head = str(tmp_path / 'head.onnx')
    onnx.utils.extract_model(path, head, [quant.input[0]],
                             [o.name for o in graph.output])
    outs = load_runtime(runtime, head, all_outputs=True)(seen['x'].numpy())
    assert min(sqnr_db(s.numpy(), o) for s, o in zip(sim, outs)) > 60.


def _departing(model, path, inputs, **options):
    """The fake quants whose segment, run alone in onnxruntime from the
    simulation's values, puts over 1% of the codes off the simulation's,
    with the segment's sources (float rounding moves 0.15% at most, a few
    codes of a small late CSPNeXt tensor)."""
    report = tensor_parity(model.get_deploy_model(), path, inputs,
                           'onnxruntime', **options)
    return {r.name[len('act_fake_quants.'):]: r.sources for r in report
            if r.differing > 0.01}


@pytest.mark.parametrize('backend', ['openvino', 'tensorrt'])
def test_tensor_by_tensor_no_segment_departs(backend, exported,
                                             digits_batch):
    model, path, _ = exported['rtmpose', backend]
    assert _departing(model, path, digits_batch['inputs']) == {}


def test_scalenorm_scale_is_not_requantized(calibrated, digits_batch,
                                             tmp_path):
    """ScaleNorm's ``x / norm * g`` (g a parameter) is a scale-shift that
    OpenVINO runs as a post-op: no fake quant between the division and the
    product, so even on a symmetric uint8 grid (zero-point 128) there is no
    Q/DQ pair of two scales that onnxruntime's DoubleQDQPairsRemover would
    merge into one rounding: the export agrees with the simulation with and
    without that optimiser."""
    model = calibrated('rtmpose', 'openvino', int8_weight_bits(),
                       asymmetric=False)
    names = [n for n, _ in model.named_modules()]
    assert any(n.endswith('head_mlp_0_mul_1') for n in names)
    assert not any(n.endswith(('head_mlp_0_truediv', 'head_gau_ln_truediv'))
                   for n in names)
    inputs = digits_batch['inputs']
    path = str(tmp_path / 'symmetric.onnx')
    export_model(model, inputs[:1], path, backend='openvino')
    assert _departing(model, path, inputs) == {}
    assert _departing(model, path, inputs, disabled_optimizers=[
        'DoubleQDQPairsRemover']) == {}
