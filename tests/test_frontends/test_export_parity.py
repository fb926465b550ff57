"""An imported ONNX model quantized for a backend with the front door's
defaults and exported: parity in onnxruntime and OpenVINO, the file's own
names, and every export loaded with onnxruntime's full graph optimisation
(in a child process: an optimiser assertion aborts the process)."""
import subprocess
import sys

import onnx
import pytest

from mmrazor_quant.apis.front_door import (
    export_model,
    load_model,
    quantize_model,
)
from mmrazor_quant.frontends.dispatch import (
    NO_INT8,
    SHAPE_SUBGRAPH,
    float_ops,
)

#: Backends whose placement the fast tier exports; the others are slow.
FAST = ('openvino', )


def _ort_full_optimisation(path: str) -> subprocess.CompletedProcess:
    code = ('import onnxruntime as ort; o = ort.SessionOptions(); '
            'o.graph_optimization_level = '
            'ort.GraphOptimizationLevel.ORT_ENABLE_ALL; '
            f'ort.InferenceSession({path!r}, o, '
            "providers=['CPUExecutionProvider'])")
    return subprocess.run([sys.executable, '-c', code], capture_output=True,
                          text=True, timeout=300)


@pytest.fixture(scope='module', params=[
    pytest.param(b, marks=() if b in FAST else pytest.mark.slow)
    for b in ('openvino', 'onnxruntime', 'tensorrt')])
def exported(request, toy_onnx, calib_dir, tmp_path_factory):
    backend = request.param
    qmodel = quantize_model(load_model(toy_onnx), calib_dir, backend,
                            calib_steps=2)
    out = str(tmp_path_factory.mktemp(backend) / 'toy_int8.onnx')
    result, parity = export_model(qmodel, out, backend,
                                  parity_data=calib_dir)
    return backend, qmodel, result, parity


def test_parity_in_onnxruntime_and_openvino(exported):
    backend, _, _, parity = exported
    assert set(parity) == {'onnxruntime', 'openvino'}
    for runtime, report in parity.items():
        assert report.num_samples == 32
        assert report.sqnr_db >= 35, (backend, runtime, report)
        # a shallow model: float32 rounding flips few quantized values
        assert report.float64_sqnr_db >= 45, (backend, runtime, report)


def test_export_keeps_the_files_names(exported):
    _, _, result, _ = exported
    graph = onnx.load(result.onnx_path).graph
    assert [i.name for i in graph.input] == ['image']
    assert [o.name for o in graph.output] == ['logits']
    for value in (graph.input[0], graph.output[0]):
        assert value.type.tensor_type.shape.dim[0].dim_param == 'batch'
    names = {n.name for n in graph.node}
    assert {'/conv/Conv', '/conv2/Conv', '/ln/LayerNormalization',
            '/Softmax'} <= names


def test_onnxruntime_full_optimisation_loads_the_export(exported):
    _, _, result, _ = exported
    run = _ort_full_optimisation(result.onnx_path)
    assert run.returncode == 0, run.stderr[-2000:]


def test_float_ops_report(exported):
    """The shape subgraph and the ops the placement leaves float are
    listed by ONNX node name and op type."""
    backend, qmodel, _, _ = exported
    rows = float_ops(qmodel)
    shape = sorted(r.name for r in rows if r.reason == SHAPE_SUBGRAPH)
    assert len(shape) == 13 and '/Shape' in shape and '/Concat' in shape
    if backend == 'openvino':
        no_int8 = {(r.name, r.op_type) for r in rows if r.reason == NO_INT8}
        assert ('/ln/LayerNormalization', 'LayerNormalization') in no_int8
        assert ('/Softmax', 'Softmax') in no_int8
