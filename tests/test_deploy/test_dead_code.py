"""Exported graphs carry nothing unused: onnxruntime loads them quietly."""
import copy

import numpy as np
import onnx
import pytest
import torch
from onnx import TensorProto, helper, numpy_helper

from mmrazor_quant.deploy import export_model
from mmrazor_quant.deploy.dead_code import remove_dead_code
from mmrazor_quant.registry import MODELS
from .conftest import MOBILENET, W8A8, build_quantized, calibrate

ort = pytest.importorskip('onnxruntime')


def _unused_initializers(graph: onnx.GraphProto):
    read = {i for n in graph.node for i in n.input}
    read |= {o.name for o in graph.output}
    names = [t.name for t in graph.initializer]
    # onnxruntime turns Constant nodes into initializers when it loads.
    names += [n.output[0] for n in graph.node if n.op_type == 'Constant']
    return [name for name in names if name not in read]


def _session(model: onnx.ModelProto, level=None):
    options = ort.SessionOptions()
    options.log_severity_level = 1  # info: warnings show in any case
    if level is not None:
        options.graph_optimization_level = level
    return ort.InferenceSession(model.SerializeToString(), options,
                                providers=['CPUExecutionProvider'])


def test_dead_chain_and_its_constants_removed():
    """x -> Relu -> y, plus a dead Constant -> Clip -> Neg chain and an
    initializer nobody reads: both nodes, the Constant and the initializer
    go; the live graph computes the same values."""
    const = helper.make_node(
        'Constant', [], ['hi'],
        value=numpy_helper.from_array(np.array(6, np.float32)))
    nodes = [
        const,
        helper.make_node('Clip', ['x', '', 'hi'], ['c']),
        helper.make_node('Neg', ['c'], ['n']),
        helper.make_node('Relu', ['x'], ['y']),
    ]
    graph = helper.make_graph(
        nodes, 'g',
        [helper.make_tensor_value_info('x', TensorProto.FLOAT, [8])],
        [helper.make_tensor_value_info('y', TensorProto.FLOAT, [8])],
        [numpy_helper.from_array(np.ones(3, np.float32), 'stale')])
    model = helper.make_model(graph, ir_version=10,
                              opset_imports=[helper.make_opsetid('', 17)])
    original = copy.deepcopy(model)
    assert remove_dead_code(model) == (3, 1)
    assert [n.op_type for n in model.graph.node] == ['Relu']
    assert not model.graph.initializer
    onnx.checker.check_model(model, full_check=True)
    x = np.linspace(-9, 9, 8, dtype=np.float32)
    np.testing.assert_array_equal(
        _session(model).run(None, {'x': x})[0],
        _session(original).run(None, {'x': x})[0])
    assert remove_dead_code(model) == (0, 0)


@pytest.fixture(scope='module')
def mobilenetv2():
    """A W8A8 (OpenVINOQuantizer) MobileNetV2 0.35x on seeded weights and
    calibration batches: ReLU6 before every activation quantization."""
    torch.manual_seed(0)
    weights = dict(mbv2=MODELS.build(copy.deepcopy(MOBILENET)).state_dict())
    name, a_qscheme = W8A8['openvino']
    model = build_quantized('mbv2', weights, name, a_qscheme)
    images = torch.randn(192, 3, 28, 28, generator=torch.Generator()
                         .manual_seed(0))
    return calibrate(model, images), images


@pytest.mark.parametrize('backend', ['onnxruntime', 'openvino'])
def test_exported_mobilenetv2_has_no_unused_initializer(
        backend, mobilenetv2, tmp_path, capfd):
    """The onnxruntime export drops the ReLU6 clips inside the uint8 grid;
    their bounds used to stay and make onnxruntime print one "Removing
    initializer" warning each (68 on this model)."""
    model, images = mobilenetv2
    capfd.readouterr()
    result = export_model(model, images[:2], str(tmp_path / 'm.onnx'),
                          backend)
    written = onnx.load(result.onnx_path)
    assert _unused_initializers(written.graph) == []
    _session(written)
    log = capfd.readouterr()
    assert 'not used by any node' not in log.err + log.out
    assert '[W:onnxruntime' not in log.err + log.out
    # Still the simulation: run without onnxruntime's int8 fusion.
    x = images[-8:]
    plain = _session(written, ort.GraphOptimizationLevel.ORT_DISABLE_ALL)
    with torch.no_grad():
        expected = result.deploy_model(x).numpy()
    got = plain.run(None, {'input': x.numpy()})[0]
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-6)
