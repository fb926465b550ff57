"""The ONNX passes of the exporters change the graph, never the values."""
import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from mmrazor_quant.deploy.bias_passes import unfuse_low_bit_bias
from mmrazor_quant.deploy.onnxruntime.passes import drop_clips_inside_grid
from mmrazor_quant.deploy.openvino.passes import (
    guard_fused_sum_inputs,
    guard_shared_quantize_inputs,
)

ort = pytest.importorskip('onnxruntime')


def _const(name, value, dtype=np.float32):
    return numpy_helper.from_array(np.asarray(value, dtype=dtype), name)


def _residual_model(qtype=TensorProto.UINT8, zp_dtype=np.uint8, scale=0.05):
    """x -> Q/DQ -> Conv(+bias) -> Q/DQ -> Add(x_dq) -> output."""
    rng = np.random.default_rng(0)
    weight = rng.integers(-7, 8, (4, 4, 3, 3)).astype(np.float32) * 0.1
    inits = [
        _const('s', scale), _const('z', 0, zp_dtype),
        _const('w', weight), _const('ws', 0.1), _const('wz', 0, np.int8),
        _const('b', rng.normal(size=4) * 0.37)]
    if qtype != TensorProto.UINT8:
        inits[1] = helper.make_tensor('z', qtype, [], [0])
        inits[4] = helper.make_tensor('wz', TensorProto.INT4, [], [0])
    nodes = [
        helper.make_node('QuantizeLinear', ['x', 's', 'z'], ['xq']),
        helper.make_node('DequantizeLinear', ['xq', 's', 'z'], ['xd']),
        helper.make_node('QuantizeLinear', ['w', 'ws', 'wz'], ['wq']),
        helper.make_node('DequantizeLinear', ['wq', 'ws', 'wz'], ['wd']),
        helper.make_node('Conv', ['xd', 'wd', 'b'], ['c'], pads=[1] * 4),
        helper.make_node('QuantizeLinear', ['c', 's', 'z'], ['cq']),
        helper.make_node('DequantizeLinear', ['cq', 's', 'z'], ['cd']),
        helper.make_node('Add', ['cd', 'xd'], ['y']),
    ]
    graph = helper.make_graph(
        nodes, 'g',
        [helper.make_tensor_value_info('x', TensorProto.FLOAT,
                                       [1, 4, 6, 6])],
        [helper.make_tensor_value_info('y', TensorProto.FLOAT, [1, 4, 6, 6])],
        inits)
    opset = 21 if qtype != TensorProto.UINT8 else 17
    # IR 10: what onnxruntime 1.31 reads (onnx 1.23 writes 14 by default)
    return helper.make_model(graph, ir_version=10,
                             opset_imports=[helper.make_opsetid('', opset)])


def _run(model, x, level):
    options = ort.SessionOptions()
    options.graph_optimization_level = level
    session = ort.InferenceSession(model.SerializeToString(), options,
                                   providers=['CPUExecutionProvider'])
    return session.run(None, {'x': x})[0]


def test_openvino_guard_only_on_conv_outputs():
    model = _residual_model()
    assert guard_fused_sum_inputs(model) == 1
    onnx.checker.check_model(model, full_check=True)
    guard = next(n for n in model.graph.node if n.op_type == 'Max')
    add = next(n for n in model.graph.node if n.op_type == 'Add')
    assert guard.input[0] == 'cd' and add.input == [guard.output[0], 'xd']
    low = next(i for i in model.graph.initializer
               if i.name == guard.input[1])
    assert float(numpy_helper.to_array(low)) == 0.0  # (0 - z) * s, uint8
    x = np.random.default_rng(1).normal(size=(1, 4, 6, 6)).astype('f4')
    level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    np.testing.assert_array_equal(
        _run(model, x, level), _run(_residual_model(), x, level))


def _token_residual_model():
    """x -> Q/DQ -> MatMul -> + bias -> Q/DQ -> Add(x_dq): a linear layer on
    transformer tokens, as the TorchScript exporter writes it."""
    rng = np.random.default_rng(0)
    inits = [_const('s', 0.05), _const('z', 0, np.uint8),
             _const('w', rng.integers(-7, 8, (4, 4)) * 0.1),
             _const('b', rng.normal(size=4) * 0.37)]
    nodes = [
        helper.make_node('QuantizeLinear', ['x', 's', 'z'], ['xq']),
        helper.make_node('DequantizeLinear', ['xq', 's', 'z'], ['xd']),
        helper.make_node('MatMul', ['xd', 'w'], ['m']),
        helper.make_node('Add', ['b', 'm'], ['c']),
        helper.make_node('QuantizeLinear', ['c', 's', 'z'], ['cq']),
        helper.make_node('DequantizeLinear', ['cq', 's', 'z'], ['cd']),
        helper.make_node('Add', ['xd', 'cd'], ['y']),
    ]
    info = [helper.make_tensor_value_info(n, TensorProto.FLOAT, [1, 6, 4])
            for n in 'xy']
    graph = helper.make_graph(nodes, 'g', info[:1], info[1:], inits)
    return helper.make_model(graph, ir_version=10,
                             opset_imports=[helper.make_opsetid('', 17)])


def test_openvino_guard_sees_through_a_bias_add():
    model = _token_residual_model()
    # the bias Add is not a residual: only the residual Add gets a guard
    assert guard_fused_sum_inputs(model) == 1
    guard = next(n for n in model.graph.node if n.op_type == 'Max')
    residual = model.graph.node[-1]
    assert guard.input[0] == 'cd' and residual.input == ['xd',
                                                         guard.output[0]]
    x = np.random.default_rng(1).normal(size=(1, 6, 4)).astype('f4')
    level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    np.testing.assert_array_equal(
        _run(model, x, level), _run(_token_residual_model(), x, level))


def _shared_conv_output_model(float_consumer):
    """x -> Q/DQ -> Conv -> c; c -> Q/DQ(z=128) -> Conv -> y and
    c -> ``float_consumer`` -> u (an FPN lateral conv and its upsampling)."""
    model = _residual_model()
    graph = model.graph
    graph.initializer.extend([_const('s2', 0.02), _const('z2', 128, np.uint8)])
    del graph.node[-3:]  # the conv output's Q/DQ and the Add
    graph.node.extend([
        helper.make_node('QuantizeLinear', ['c', 's2', 'z2'], ['cq']),
        helper.make_node('DequantizeLinear', ['cq', 's2', 'z2'], ['cd']),
        helper.make_node('Conv', ['cd', 'wd'], ['y'], pads=[1] * 4),
        helper.make_node(float_consumer, ['c'], ['u']),
    ])
    graph.output.append(
        helper.make_tensor_value_info('u', TensorProto.INT64, [4])
        if float_consumer == 'Shape' else helper.make_tensor_value_info(
            'u', TensorProto.FLOAT, [1, 4, 6, 6]))
    return model


def test_openvino_guard_before_quantize_of_shared_conv_output():
    model = _shared_conv_output_model('Sigmoid')
    assert guard_shared_quantize_inputs(model) == 1
    onnx.checker.check_model(model, full_check=True)
    guard = next(n for n in model.graph.node if n.op_type == 'Max')
    quantize = next(n for n in model.graph.node
                    if n.op_type == 'QuantizeLinear' and 's2' in n.input)
    assert guard.input[0] == 'c' and quantize.input[0] == guard.output[0]
    low = next(i for i in model.graph.initializer
               if i.name == guard.input[1])
    assert float(numpy_helper.to_array(low)) == pytest.approx(-128 * 0.02)
    x = np.random.default_rng(1).normal(size=(1, 4, 6, 6)).astype('f4') * 4
    level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    reference = _shared_conv_output_model('Sigmoid')
    for got, want in zip(
            _run_all(model, x, level), _run_all(reference, x, level)):
        np.testing.assert_array_equal(got, want)


def _extra_conv_model():
    """c -> Q/DQ -> Conv -> y (an FPN level) and c -> Relu -> Q/DQ -> Conv
    -> r (the extra conv on ReLU(P6)): the quantize of the second branch
    reads the shared conv output through the Relu."""
    model = _shared_conv_output_model('Relu')
    graph = model.graph
    graph.node.extend([
        helper.make_node('QuantizeLinear', ['u', 's', 'z'], ['uq']),
        helper.make_node('DequantizeLinear', ['uq', 's', 'z'], ['ud']),
        helper.make_node('Conv', ['ud', 'wd'], ['r'], pads=[1] * 4),
    ])
    del graph.output[-1]
    graph.output.append(helper.make_tensor_value_info(
        'r', TensorProto.FLOAT, [1, 4, 6, 6]))
    return model


def test_openvino_guard_before_relu_of_shared_conv_output():
    model = _extra_conv_model()
    # one guard before the direct quantize, one before the Relu
    assert guard_shared_quantize_inputs(model) == 2
    onnx.checker.check_model(model, full_check=True)
    relu = next(n for n in model.graph.node if n.op_type == 'Relu')
    guard = next(n for n in model.graph.node
                 if n.op_type == 'Max' and n.output[0] == relu.input[0])
    assert guard.input[0] == 'c'
    low = next(i for i in model.graph.initializer
               if i.name == guard.input[1])
    assert float(numpy_helper.to_array(low)) == 0.  # uint8, zero-point 0
    x = np.random.default_rng(1).normal(size=(1, 4, 6, 6)).astype('f4') * 4
    level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    for got, want in zip(_run_all(model, x, level),
                         _run_all(_extra_conv_model(), x, level)):
        np.testing.assert_array_equal(got, want)


def _pooled_level_model():
    """c -> Q/DQ -> Conv -> y (an FPN level) and c -> MaxPool(1, stride 2)
    -> Q/DQ -> Conv -> r (Faster R-CNN's P6, pooled from P5): the quantize
    of the second branch reads the shared conv output through the pool."""
    model = _extra_conv_model()
    graph = model.graph
    relu = next(n for n in graph.node if n.op_type == 'Relu')
    relu.CopyFrom(helper.make_node('MaxPool', ['c'], ['u'],
                                   kernel_shape=[1, 1], strides=[2, 2]))
    del graph.output[-1]
    graph.output.append(helper.make_tensor_value_info(
        'r', TensorProto.FLOAT, [1, 4, 3, 3]))
    return model


def test_openvino_guard_before_maxpool_of_shared_conv_output():
    model = _pooled_level_model()
    # one guard before the direct quantize, one before the pool
    assert guard_shared_quantize_inputs(model) == 2
    onnx.checker.check_model(model, full_check=True)
    pool = next(n for n in model.graph.node if n.op_type == 'MaxPool')
    guard = next(n for n in model.graph.node
                 if n.op_type == 'Max' and n.output[0] == pool.input[0])
    assert guard.input[0] == 'c'
    x = np.random.default_rng(1).normal(size=(1, 4, 6, 6)).astype('f4') * 4
    level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    for got, want in zip(_run_all(model, x, level),
                         _run_all(_pooled_level_model(), x, level)):
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize('float_consumer', ['Shape', None])
def test_openvino_no_guard_without_float_consumer(float_consumer):
    if float_consumer is None:
        model = _residual_model()  # conv output read by its Q only
    else:
        model = _shared_conv_output_model(float_consumer)
    assert guard_shared_quantize_inputs(model) == 0


def _run_all(model, x, level):
    session = ort.InferenceSession(model.SerializeToString(),
                                   _options(level),
                                   providers=['CPUExecutionProvider'])
    return session.run(None, {'x': x})


def test_low_bit_bias_moved_out_of_conv():
    model = _residual_model(TensorProto.UINT4)
    reference = _residual_model(TensorProto.UINT4)
    assert unfuse_low_bit_bias(model) == 1
    onnx.checker.check_model(model, full_check=True)
    conv = next(n for n in model.graph.node if n.op_type == 'Conv')
    assert len(conv.input) == 2
    x = np.abs(np.random.default_rng(2).normal(size=(1, 4, 6, 6))) \
        .astype('f4')
    unoptimized = _run(reference, x,
                       ort.GraphOptimizationLevel.ORT_DISABLE_ALL)
    # with the bias out of the Conv, onnxruntime's optimizations no longer
    # round it to the int32 grid: the result is the unoptimized one
    moved = _run(model, x, ort.GraphOptimizationLevel.ORT_ENABLE_ALL)
    np.testing.assert_allclose(moved, unoptimized, rtol=0, atol=1e-6)


def test_8bit_bias_left_in_place():
    assert unfuse_low_bit_bias(_residual_model()) == 0


def _clip_quantize_model(op, scale, qtype=TensorProto.UINT4):
    """x -> Relu/Clip(0, 6) -> Q/DQ (per tensor, zero-point 0)."""
    inits = [_const('s', scale), helper.make_tensor('z', qtype, [], [0]),
             _const('lo', 0.0), _const('hi', 6.0)]
    clip_inputs = ['x'] if op == 'Relu' else ['x', 'lo', 'hi']
    nodes = [
        helper.make_node(op, clip_inputs, ['c']),
        helper.make_node('QuantizeLinear', ['c', 's', 'z'], ['q']),
        helper.make_node('DequantizeLinear', ['q', 's', 'z'], ['y']),
    ]
    graph = helper.make_graph(
        nodes, 'g',
        [helper.make_tensor_value_info('x', TensorProto.FLOAT, [64])],
        [helper.make_tensor_value_info('y', TensorProto.FLOAT, [64])],
        inits)
    return helper.make_model(graph, ir_version=10,
                             opset_imports=[helper.make_opsetid('', 21)])


@pytest.mark.parametrize('op,scale,qtype,dropped', [
    ('Clip', 6 / 15, TensorProto.UINT4, 1),   # ReLU6 before uint4
    ('Relu', 0.05, TensorProto.UINT8, 1),     # ReLU before uint8, z = 0
    ('Clip', 0.5, TensorProto.UINT8, 0),      # grid reaches 127 > 6
    ('Relu', 0.05, TensorProto.INT8, 0),      # int8 reaches below 0
])
def test_clip_dropped_only_inside_grid(op, scale, qtype, dropped):
    model = _clip_quantize_model(op, scale, qtype)
    assert drop_clips_inside_grid(model) == dropped
    onnx.checker.check_model(model, full_check=True)
    ops = [n.op_type for n in model.graph.node]
    assert ops.count(op) == 1 - dropped
    x = np.linspace(-12, 12, 64, dtype=np.float32)
    level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    run = lambda m: ort.InferenceSession(  # noqa: E731
        m.SerializeToString(), _options(level),
        providers=['CPUExecutionProvider']).run(None, {'x': x})[0]
    np.testing.assert_array_equal(
        run(model), run(_clip_quantize_model(op, scale, qtype)))
    # and it loads with every optimization (Clip->Q fusion rejects INT4)
    if dropped:
        run_all = ort.InferenceSession(model.SerializeToString(),
                                       providers=['CPUExecutionProvider'])
        run_all.run(None, {'x': x})


def _options(level):
    options = ort.SessionOptions()
    options.graph_optimization_level = level
    return options


def test_clip_split_into_min_max_before_4bit():
    """A ReLU6 the uint4 grid reaches past is kept, as Min/Max (equal
    values), so onnxruntime's Clip->Q fusion does not reject the model."""
    model = _clip_quantize_model('Clip', 0.5)
    assert drop_clips_inside_grid(model) == 0
    onnx.checker.check_model(model, full_check=True)
    ops = [n.op_type for n in model.graph.node]
    assert 'Clip' not in ops and ops.count('Min') == ops.count('Max') == 1
    x = np.linspace(-12, 12, 64, dtype=np.float32)
    level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    reference = ort.InferenceSession(
        _clip_quantize_model('Clip', 0.5).SerializeToString(),
        _options(level), providers=['CPUExecutionProvider'])
    fused = ort.InferenceSession(model.SerializeToString(),
                                 providers=['CPUExecutionProvider'])
    np.testing.assert_array_equal(fused.run(None, {'x': x})[0],
                                  reference.run(None, {'x': x})[0])
