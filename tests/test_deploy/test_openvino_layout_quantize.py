"""A quantizer reading a conv output through ``Reshape -> Transpose`` (a
transformer's ``flatten(2).transpose(1, 2)``) with a dynamic batch: in
OpenVINO's CPU plugin every channel is rescaled with channel 0's
dequantization scale, unless the export quantizes right after the conv
(:func:`quantize_before_layout_ops`)."""
import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from mmrazor_quant.deploy.openvino.layout_quantize import (
    quantize_before_layout_ops,
)

ov = pytest.importorskip('openvino')
ort = pytest.importorskip('onnxruntime')

C_IN, C_OUT, H, W = 16, 8, 4, 4
OUT_SCALE = 0.1


def _const(name, value, dtype=np.float32):
    return numpy_helper.from_array(np.asarray(value, dtype=dtype), name)


def _flatten_transpose_model() -> onnx.ModelProto:
    """x -> Q/DQ -> Conv 1x1 (per-channel weight scales 0.2x .. 2x apart)
    -> Reshape [0, C, H*W] -> Transpose (0, 2, 1) -> Q/DQ -> y, batch
    dynamic."""
    rng = np.random.default_rng(0)
    spread = np.linspace(0.2, 2., C_OUT).reshape(-1, 1, 1, 1)
    weight = (rng.normal(size=(C_OUT, C_IN, 1, 1)) * spread).astype('f4')
    w_scale = np.abs(weight).reshape(C_OUT, -1).max(1) / 127
    inits = [
        _const('s', 0.05), _const('z', 0, np.int8), _const('so', OUT_SCALE),
        _const('w', weight), _const('ws', w_scale),
        _const('wz', np.zeros(C_OUT), np.int8),
        _const('target', [0, C_OUT, H * W], np.int64)]
    nodes = [
        helper.make_node('QuantizeLinear', ['x', 's', 'z'], ['xq']),
        helper.make_node('DequantizeLinear', ['xq', 's', 'z'], ['xd']),
        helper.make_node('QuantizeLinear', ['w', 'ws', 'wz'], ['wq'], axis=0),
        helper.make_node('DequantizeLinear', ['wq', 'ws', 'wz'], ['wd'],
                         axis=0),
        helper.make_node('Conv', ['xd', 'wd'], ['c']),
        helper.make_node('Reshape', ['c', 'target'], ['r']),
        helper.make_node('Transpose', ['r'], ['t'], perm=[0, 2, 1]),
        helper.make_node('QuantizeLinear', ['t', 'so', 'z'], ['tq']),
        helper.make_node('DequantizeLinear', ['tq', 'so', 'z'], ['y']),
    ]
    graph = helper.make_graph(
        nodes, 'g',
        [helper.make_tensor_value_info('x', TensorProto.FLOAT,
                                       ['N', C_IN, H, W])],
        [helper.make_tensor_value_info('y', TensorProto.FLOAT,
                                       ['N', H * W, C_OUT])], inits)
    return helper.make_model(graph, ir_version=10,
                             opset_imports=[helper.make_opsetid('', 17)])


def _steps_apart(model: onnx.ModelProto, x: np.ndarray, tmp_path) -> tuple:
    """(share of outputs that differ, largest difference in steps) of
    OpenVINO against onnxruntime, which computes the graph exactly here."""
    path = str(tmp_path / 'm.onnx')
    onnx.save(model, path)
    want = ort.InferenceSession(path).run(None, {'x': x})[0]
    compiled = ov.Core().compile_model(
        path, 'CPU', {'INFERENCE_PRECISION_HINT': 'f32'})
    got = compiled({'x': x})[0]
    steps = np.abs(got - want) / OUT_SCALE
    return float((steps > 0.5).mean()), float(steps.max())


def test_quantize_moves_before_reshape_and_transpose():
    model = _flatten_transpose_model()
    assert quantize_before_layout_ops(model) == 1
    onnx.checker.check_model(model, full_check=True)
    ops = [n.op_type for n in model.graph.node]
    assert ops[-4:] == ['QuantizeLinear', 'DequantizeLinear', 'Reshape',
                        'Transpose']
    assert model.graph.node[-1].output[0] == 'y'
    assert next(n for n in model.graph.node
                if n.op_type == 'QuantizeLinear' and 'so' in n.input
                ).input[0] == 'c'


def test_openvino_exact_with_quantize_before_layout_ops(tmp_path):
    x = np.random.default_rng(1).normal(size=(2, C_IN, H, W)).astype('f4')
    x *= 2
    # as the ONNX exporter writes it, OpenVINO scales every channel with
    # channel 0's scale (the weight scales are up to 10x apart)
    share, worst = _steps_apart(_flatten_transpose_model(), x, tmp_path)
    assert share > 0.5 and worst > 10
    moved = _flatten_transpose_model()
    quantize_before_layout_ops(moved)
    assert _steps_apart(moved, x, tmp_path) == (0., 0.)
    # the same values in onnxruntime (the move commutes exactly)
    level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    outs = []
    for model in (_flatten_transpose_model(), moved):
        options = ort.SessionOptions()
        options.graph_optimization_level = level
        session = ort.InferenceSession(model.SerializeToString(), options)
        outs.append(session.run(None, {'x': x})[0])
    np.testing.assert_array_equal(*outs)


def test_per_channel_or_shared_quantize_stays():
    """A per-axis quantize does not commute with the transpose (its axis
    moves); a layout op read by two consumers stays where it is."""
    model = _flatten_transpose_model()
    model.graph.node.append(helper.make_node('Relu', ['r'], ['extra']))
    model.graph.output.append(helper.make_tensor_value_info(
        'extra', TensorProto.FLOAT, None))
    assert quantize_before_layout_ops(model) == 0
    per_axis = _flatten_transpose_model()
    for node in per_axis.graph.node:
        if 'so' in node.input:
            node.input[1] = 'so_axis'
            node.attribute.append(helper.make_attribute('axis', 2))
    per_axis.graph.initializer.append(
        _const('so_axis', np.full(C_OUT, OUT_SCALE)))
    onnx.checker.check_model(per_axis)
    assert quantize_before_layout_ops(per_axis) == 0
