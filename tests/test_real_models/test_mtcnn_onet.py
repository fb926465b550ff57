"""A plain torch module with trained weights through the front door:
MTCNN's ONet from facenet-pytorch, on scikit-image's LFW crops.

Skipped, saying which, without ``facenet-pytorch`` or scikit-image's data
(``make real-models``). ONet is quantized from the module object itself
(no config, no mmengine model) for OpenVINO and onnxruntime with the front
door's defaults on 50 calibration crops; the other 100 crops evaluate it
against the labels and against fp32, and the export against the
simulation in the backend's runtime (every output; both runtimes must load
it, onnxruntime with its full graph optimisation).
"""
import numpy as np
import pytest
import torch

from benchmarks.real_models import mtcnn

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        mtcnn.missing_reason() is not None,
        reason=str(mtcnn.missing_reason()))
]


@pytest.fixture(scope='module')
def crops():
    calib, _ = mtcnn.lfw_crops('calib')
    inputs, labels = mtcnn.lfw_crops('eval')
    return calib, inputs, labels


@pytest.fixture(scope='module')
def fp32(crops):
    net = mtcnn.onet()
    with torch.no_grad():
        outputs = net(torch.from_numpy(crops[1]))
    return dict(zip(mtcnn.OUTPUT_NAMES, (o.numpy() for o in outputs)))


def test_crops_are_lfw_faces_then_not(crops):
    calib, inputs, labels = crops
    assert calib.shape == (100, 3, 48, 48) and inputs.shape == calib.shape
    assert labels.tolist() == [1] * 50 + [0] * 50
    # MTCNN's normalisation of 0..255 grey: (x - 127.5) / 128
    assert -1.0 <= inputs.min() and inputs.max() <= 127.5 / 128
    np.testing.assert_array_equal(inputs[:, 0], inputs[:, 2])


def test_fp32_tells_faces_apart(fp32, crops):
    assert mtcnn.face_accuracy(fp32['face_prob'], crops[2]) == 100.0


@pytest.mark.parametrize('backend', ['openvino', 'onnxruntime'])
def test_ours_matches_fp32_and_its_export(backend, crops, fp32, tmp_path):
    from mmrazor_quant.apis import front_door
    calib, inputs, labels = crops
    model = front_door.load_model(
        mtcnn.onet(), input_names=['image'],
        output_names=list(mtcnn.OUTPUT_NAMES))
    qmodel = front_door.quantize_model(
        model, torch.from_numpy(calib), backend=backend)
    with torch.no_grad():
        outputs = qmodel(torch.from_numpy(inputs), mode='tensor')
    ours = dict(zip(mtcnn.OUTPUT_NAMES, (o.numpy() for o in outputs)))
    assert mtcnn.face_accuracy(ours['face_prob'], labels) == 100.0
    sqnr = mtcnn.output_sqnr(fp32, ours)
    assert min(sqnr.values()) >= 20.0, sqnr
    result, _ = front_door.export_model(
        qmodel, str(tmp_path / 'onet_int8.onnx'), backend=backend,
        example=torch.from_numpy(inputs[:2]))
    with torch.no_grad():
        sim = result.deploy_model(torch.from_numpy(inputs))
    sim = dict(zip(mtcnn.OUTPUT_NAMES, (o.numpy() for o in sim)))
    runtimes = _runtimes(result.onnx_path)  # both load the file
    exported = dict(zip(mtcnn.OUTPUT_NAMES, runtimes[backend](inputs)))
    parity = mtcnn.output_sqnr(sim, exported)
    assert min(parity.values()) >= 35.0, parity


def _runtimes(path):
    """The file in onnxruntime (full graph optimisation) and OpenVINO,
    each a function of the batch giving every output."""
    import onnxruntime as ort
    import openvino as ov
    options = ort.SessionOptions()
    options.graph_optimization_level = \
        ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    session = ort.InferenceSession(
        path, options, providers=['CPUExecutionProvider'])
    compiled = ov.Core().compile_model(path, 'CPU')
    return dict(
        onnxruntime=lambda x: session.run(None, {'image': x}),
        openvino=lambda x: [compiled(x)[o] for o in compiled.outputs])
