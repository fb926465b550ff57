"""rknn-toolkit2's int8 arithmetic, pinned on a small conv in its simulator.

The toolkit reads an int8 Q/DQ pair with zero-point 0 (weights, and here
the input) as symmetric and re-derives its scale as ``128 s / 127``,
re-quantizing the weights to ``round(q * 127 / 128)``; the simulator then
computes the integer conv exactly (float32, no tie within reach). Written
by :func:`encode_for_rknn_toolkit`, the same model runs on our own scales
and integers. Both are checked against integer formulas, output by output.
"""
import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from mmrazor_quant.deploy.rknn.simulator import build_rknn
from mmrazor_quant.deploy.rknn.toolkit_encoding import (
    TOOLKIT_SCALE_RATIO,
    encode_for_rknn_toolkit,
)
from .test_rknn import needs_rknn

CIN, COUT, SIZE = 8, 4, 6
S_X, S_Y, Z_Y = 0.03, 0.11, 3
S_W = np.array([0.011, 0.017, 0.0062, 0.023], np.float32)


def _qdq(name, scale, zero_point, axis=None):
    """Initializers and the Q/DQ pair of ``name`` (-> ``name_dq``)."""
    zp = np.zeros(np.shape(scale), np.int8) + np.int8(zero_point)
    inits = [numpy_helper.from_array(np.asarray(scale, np.float32),
                                     f'{name}_s'),
             numpy_helper.from_array(zp, f'{name}_z')]
    kw = {} if axis is None else dict(axis=axis)
    io = [f'{name}_s', f'{name}_z']
    return inits, [
        helper.make_node('QuantizeLinear', [name] + io, [f'{name}_q'], **kw),
        helper.make_node('DequantizeLinear', [f'{name}_q'] + io,
                         [f'{name}_dq'], **kw)
    ]


def _conv_model(q_w, bias, residual=False):
    """x -Q/DQ (zero-point 0)-> conv (per-channel weights behind Q/DQ,
    float bias) [-> + 1] -Q/DQ-> y."""
    inits = [numpy_helper.from_array(
        (q_w * S_W.reshape(-1, 1, 1, 1)).astype(np.float32), 'w'),
             numpy_helper.from_array(bias.astype(np.float32), 'b')]
    nodes = []
    for name, scale, zp, axis in (('x', S_X, 0, None), ('w', S_W, 0, 0)):
        more_inits, more_nodes = _qdq(name, scale, zp, axis)
        inits += more_inits
        nodes += more_nodes
    nodes.append(helper.make_node('Conv', ['x_dq', 'w_dq', 'b'], ['c'],
                                  pads=[1] * 4))
    out = 'c'
    if residual:
        inits.append(numpy_helper.from_array(
            np.ones((1, COUT, 1, 1), np.float32), 'r'))
        nodes.append(helper.make_node('Add', ['c', 'r'], ['a']))
        out = 'a'
    more_inits, more_nodes = _qdq(out, S_Y, Z_Y)
    graph = helper.make_graph(
        nodes + more_nodes, 'conv',
        [helper.make_tensor_value_info('x', TensorProto.FLOAT,
                                       [1, CIN, SIZE, SIZE])],
        [helper.make_tensor_value_info(f'{out}_dq', TensorProto.FLOAT,
                                       [1, COUT, SIZE, SIZE])],
        inits + more_inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid(
        '', 13)])
    model.ir_version = 8
    return model


def _case(seed=0):
    """Weights (all of [-127, 126] but the tie +-64 of the toolkit's
    re-quantization), a bias on the grid ``s_x * s_w`` and inputs."""
    rng = np.random.default_rng(seed)
    q_w = rng.integers(-127, 127, (COUT, CIN, 3, 3))
    q_w[np.abs(q_w) == 64] = 63
    q_w[:, 0, 0, 0] = (-127, 126, 1, -1)
    bias = rng.integers(-2000, 2000, COUT) * S_X * S_W
    x = (rng.integers(-100, 120, (1, CIN, SIZE, SIZE)) +
         rng.uniform(-0.3, 0.3, (1, CIN, SIZE, SIZE))) * S_X
    return q_w, bias, x.astype(np.float32)


def _predict(q_w, bias, x, s_x, s_w):
    """The int8 conv on the grids ``s_x``, ``s_w``: integer accumulation,
    one rounding of ``acc * s_x * s_w / s_y``; and how far its roundings
    come to a tie (in steps)."""
    q_x = np.clip(np.rint(x / s_x), -128, 127).astype(np.int64)
    b_q = np.rint(bias / (s_x * s_w))
    padded = np.pad(q_x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    acc = np.zeros((1, COUT, SIZE, SIZE), np.int64)
    for i in range(3):
        for j in range(3):
            acc += np.einsum('nchw,oc->nohw',
                             padded[:, :, i:i + SIZE, j:j + SIZE],
                             q_w[:, :, i, j].astype(np.int64))
    real = (acc + b_q.reshape(1, -1, 1, 1)) * (
        s_x * s_w / S_Y).reshape(1, -1, 1, 1)
    margin = min(
        np.abs(np.abs(v - np.floor(v)) - 0.5).min()
        for v in (real, x / s_x, bias / (s_x * s_w)))
    return np.clip(np.rint(real) + Z_Y, -128, 127), margin


def _simulate(model, x, tmp_path, encode):
    path = str(tmp_path / f'conv_{encode}.onnx')
    onnx.save(model, path)
    result, y = build_rknn(path, x.shape, inputs=x, encode=encode)
    return result, np.rint(y.reshape(1, COUT, SIZE, SIZE) / S_Y) + Z_Y


@needs_rknn
def test_rknn_requantizes_zero_point_zero_pairs(tmp_path):
    """As given, the simulator runs ``round(q * 127 / 128)`` weights on
    ``128 s_w / 127`` and the input on ``128 s_x / 127``: every output as
    that integer formula says (none as ours)."""
    q_w, bias, x = _case()
    ratio = np.float64(TOOLKIT_SCALE_RATIO)
    expected, margin = _predict(np.rint(q_w / ratio).astype(np.int64), bias,
                                x, S_X * ratio, S_W.astype(np.float64) *
                                ratio)
    # No rounding within 1e-4 steps of a tie: float32 (error ~1e-5 steps
    # at |q| <= 128) cannot flip one.
    assert margin > 1e-4
    _, got = _simulate(_conv_model(q_w, bias), x, tmp_path, encode=False)
    np.testing.assert_array_equal(got, expected)
    ours, _ = _predict(q_w, bias, x, S_X, S_W.astype(np.float64))
    assert (got != ours).mean() > 0.1


@needs_rknn
def test_rknn_encoded_model_runs_our_integers(tmp_path):
    """Encoded, the same model runs our scales and integers exactly (the
    weight -127 included; +126 is the largest a .rknn holds)."""
    q_w, bias, x = _case()
    expected, margin = _predict(q_w, bias, x, S_X, S_W.astype(np.float64))
    assert margin > 1e-4
    result, got = _simulate(_conv_model(q_w, bias), x, tmp_path, True)
    assert result['encoding'] == dict(pools=0, fused_sums=0,
                                      zero_point_zero=2, weights=1,
                                      weights_off_grid=0)
    np.testing.assert_array_equal(got, expected)


def test_encoding_rescales_zero_point_zero_pairs_only():
    """Zero-point-0 pairs at ``s * 127 / 128`` with weights
    ``round(q * 128 / 127)``, other pairs untouched, a Q/DQ pair between
    the conv and the residual add (the add's qparams)."""
    q_w, bias, _ = _case()
    model = _conv_model(q_w, bias, residual=True)
    counts = encode_for_rknn_toolkit(model)
    assert counts == dict(pools=0, fused_sums=1, zero_point_zero=2,
                          weights=1, weights_off_grid=0)
    inits = {t.name: numpy_helper.to_array(t)
             for t in model.graph.initializer}
    np.testing.assert_allclose(inits['x_s_rknn'], S_X * 127 / 128,
                               rtol=1e-7)
    np.testing.assert_allclose(inits['w_s_rknn'], S_W * 127 / 128,
                               rtol=1e-7)
    assert float(inits['a_s']) == np.float32(S_Y)
    encoded = inits['w_rknn'] / inits['w_s_rknn'].reshape(-1, 1, 1, 1)
    np.testing.assert_allclose(encoded, np.rint(q_w * 128 / 127),
                               atol=1e-3)
    # The toolkit's re-quantization of the encoded weights gives ours back.
    np.testing.assert_array_equal(np.rint(np.rint(q_w * 128 / 127) * 127 /
                                          128), q_w)
    nodes = {n.name: n for n in model.graph.node}
    add = next(n for n in model.graph.node if n.op_type == 'Add')
    assert add.input[0] == 'c_rknn_dq'
    pair = [n for n in model.graph.node if n.output[0].startswith('c_rknn')]
    assert [n.op_type for n in pair] == ['QuantizeLinear',
                                        'DequantizeLinear']
    assert list(pair[0].input[1:]) == ['a_s', 'a_z']
    assert nodes and onnx.checker.check_model(model) is None


@pytest.mark.parametrize('value', [127, -128])
def test_encoding_counts_the_weights_a_rknn_cannot_hold(value):
    """+127 and -128 have no encoding (the toolkit makes them +126 and
    -127): counted, for the worker's result."""
    q_w, bias, _ = _case()
    q_w[0, 0, 0, 1:3] = value
    counts = encode_for_rknn_toolkit(_conv_model(q_w, bias))
    assert counts['weights_off_grid'] == 2


def test_encoding_writes_global_average_pool_as_depthwise_conv():
    """The pool becomes a depthwise conv (weights 64 steps of 1/(64 H W),
    encoded as 65) that keeps the pool's output Q/DQ pair."""
    q_w, bias, _ = _case()
    model = _conv_model(q_w, bias)
    out = model.graph.output[0]
    out.name = 'p'
    out.type.tensor_type.shape.dim[2].dim_value = 1
    out.type.tensor_type.shape.dim[3].dim_value = 1
    model.graph.node.append(
        helper.make_node('GlobalAveragePool', ['c_dq'], ['p']))
    counts = encode_for_rknn_toolkit(model)
    assert counts['pools'] == 1 and counts['weights'] == 2
    conv = next(n for n in model.graph.node if n.output[0] == 'p')
    attrs = {a.name: helper.get_attribute_value(a) for a in conv.attribute}
    assert conv.op_type == 'Conv' and attrs == dict(
        group=COUT, kernel_shape=[SIZE, SIZE])
    inits = {t.name: numpy_helper.to_array(t)
             for t in model.graph.initializer}
    quant = next(n for n in model.graph.node
                 if n.op_type == 'QuantizeLinear' and
                 n.input[0].startswith('p_rknn_w'))
    steps = inits[quant.input[0]] / inits[quant.input[1]].reshape(-1, 1, 1, 1)
    np.testing.assert_allclose(steps, 65, rtol=1e-6)
    assert onnx.checker.check_model(model) is None
