"""Exported pose estimators (QDQ ONNX ending at the head's raw outputs) vs
the simulation, in onnxruntime and OpenVINO, on real keypoint digits."""
import pytest

from mmrazor_quant.deploy import deploy_head_of, export_model
from mmrazor_quant.deploy.pose import PoseDeployHead, check_pose_parity
from ..int8_host import int8_weight_bits

CASES = [('rtmpose', 'openvino'), ('rtmpose', 'tensorrt'),
         ('simplebaseline', 'openvino')]
# Lowest head-output SQNR asserted. RTMPose's OpenVINO placement (both
# inputs of every element-wise mul in the GAU quantized) reaches 31-36 dB
# in onnxruntime depending on the calibration batches, even with Q/DQ run
# in float (optimize=False): a one-step flip before the 2x2 SimCC
# bottleneck moves whole vectors (docs/pose.md, "Export parity").
MIN_SQNR = {('rtmpose', 'openvino'): 30.}


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
        export_model(model, inputs[:1], path, backend=backend)
        out[arch, backend] = (model, path)
    return out


@pytest.mark.parametrize('arch,backend', CASES)
@pytest.mark.parametrize('runtime', ['onnxruntime', 'openvino'])
def test_head_outputs_and_keypoints_match_simulation(arch, backend, runtime,
                                                     exported, digits_batch):
    model, path = exported[arch, backend]
    report = check_pose_parity(model, path, digits_batch['inputs'], runtime)
    assert report.num_samples == 16
    assert report.min_sqnr_db > MIN_SQNR.get((arch, backend), 35.), \
        report.format()
    # the random heads' outputs are nearly flat: an arg-max tie may move a
    # keypoint, but nearly all decode to the same place
    assert report.keypoint_agreement >= 0.9, report.format()
    assert report.mean_keypoint_diff <= 0.5, report.format()


def test_pose_models_get_the_pose_deploy_head(exported):
    model, _ = exported['rtmpose', 'openvino']
    assert isinstance(deploy_head_of(model), PoseDeployHead)
