"""TFLite's int8 BATCH_MATMUL in the simulation: the fixed-point
requantization, equal to LiteRT's interpreter bit for bit."""
import numpy as np
import pytest
import torch

from mmrazor_quant.models.fake_quants import (
    FixedFakeQuantize,
    LearnableFakeQuantize,
)
from mmrazor_quant.models.quantizers.litert_int8_matmul import (
    multiply_by_quantized_multiplier,
    quantize_multiplier,
    requantize_multiplier,
    tflite_int8_matmul,
)

_QSCHEME = dict(qdtype='qint8', bit=8, is_symmetry=False)
#: Scales where the two roundings of TFLite's requantization decide: the
#: accumulator 28835 times the multiplier is 94.498, which TFLite's
#: arithmetic puts on 95.
_SCALES = (0.02114207, 0.026969021, 0.1739842)
_ACC = 28835


def _fake_quant(scale, zero_point):
    return FixedFakeQuantize(qscheme=_QSCHEME,
                             scale=torch.tensor(scale, dtype=torch.float32),
                             zero_point=torch.tensor(zero_point))


def test_quantize_multiplier():
    assert quantize_multiplier(0.5) == (1 << 30, 0)
    assert quantize_multiplier(0.75) == (3 << 29, 0)
    assert quantize_multiplier(3.0) == (3 << 29, 2)
    # a mantissa that rounds up to 2^31 moves to the next exponent
    assert quantize_multiplier(1 - 2.0**-40) == (1 << 30, 1)
    assert quantize_multiplier(0.0) == (0, 0)
    for real in (1e-3, 0.0123, 0.3333, 7.5):
        fixed, exponent = quantize_multiplier(real)
        assert 1 << 30 <= fixed < 1 << 31
        assert abs(fixed * 2.0**(exponent - 31) - real) <= \
            2.0**(exponent - 32)


def test_requantization_rounds_twice():
    # x * 0.5 (the doubling high multiply by 2^30) rounds ties up:
    # 2.5 -> 3, -1.5 -> -1, 1.5 -> 2
    x = torch.tensor([5, -3, 3, 0], dtype=torch.int64)
    out = multiply_by_quantized_multiplier(x, 1 << 30, 0)
    assert out.tolist() == [3, -1, 2, 0]
    # then the shift rounds again, ties away from zero: 5 * 0.25 = 1.25
    # becomes 3 / 2 -> 2, -3 * 0.25 becomes -1 / 2 -> -1
    out = multiply_by_quantized_multiplier(x, 1 << 30, -1)
    assert out.tolist() == [2, -1, 1, 0]
    # the multiplier is float32(s_a * s_b) / s_out, not the double product
    s_a, s_b, s_out = (torch.tensor(s) for s in _SCALES)
    fixed, exponent = requantize_multiplier(s_a, s_b, s_out)
    exact = _ACC * float(s_a) * float(s_b) / float(s_out)
    assert 94.49 < exact < 94.5 and round(exact) == 94
    acc = torch.tensor([_ACC, -_ACC])
    assert multiply_by_quantized_multiplier(
        acc, fixed, exponent).tolist() == [95, -95]
    double = quantize_multiplier(float(s_a) * float(s_b) / float(s_out))
    assert double != (fixed, exponent)
    assert multiply_by_quantized_multiplier(
        acc, *double).tolist() == [94, -94]


def _operands(zero_a, zero_b):
    """Random int8 operands (1, 2, 17, 24) and (1, 2, 24, 17), and in row 0
    of head 0 the accumulator 28835 against column 0 (150 * 127 + 95 *
    103)."""
    rng = np.random.default_rng(0)
    a = rng.integers(-128, 128, (1, 2, 17, 24)).astype(np.int8)
    b = rng.integers(-128, 128, (1, 2, 24, 17)).astype(np.int8)
    a[0, 0, 0] = zero_a
    b[0, 0, :, 0] = zero_b
    a[0, 0, 0, :2] = (150 + zero_a, 95 + zero_a)
    b[0, 0, :2, 0] = (127 + zero_b, 103 + zero_b)
    return a, b


def _tflite_batch_matmul(a, b, qparams, path, delegate):
    """LiteRT's int8 BATCH_MATMUL of ``a`` and ``b``, in a file of its
    own."""
    from mmrazor_quant.deploy.litert.flatbuffer import QParams, TFLiteGraph
    from mmrazor_quant.deploy.litert.runtime import load_interpreter
    graph = TFLiteGraph()
    shapes = (a.shape, b.shape, a.shape[:-1] + b.shape[-1:])
    ids = [graph.add_tensor(name, shape, np.int8, QParams.of(*q))
           for name, shape, q in zip('abo', shapes, qparams)]
    graph.add_op('BATCH_MATMUL', ids[:2], ids[2:], version=2,
                 options='BatchMatMulOptions', AdjX=False, AdjY=False)
    graph.inputs, graph.outputs = ids[:2], ids[2:]
    path.write_bytes(graph.serialize())
    interpreter = load_interpreter(str(path), delegate=delegate)
    inputs = interpreter.get_input_details()
    interpreter.set_tensor(inputs[0]['index'], a)
    interpreter.set_tensor(inputs[1]['index'], b)
    interpreter.invoke()
    out = interpreter.get_output_details()[0]['index']
    return interpreter.get_tensor(out).astype(np.int64)


@pytest.mark.parametrize(('delegate', 'zero_b'), [(True, -60), (False, -60),
                                               (True, 0), (False, 0)])
def test_simulated_matmul_is_the_interpreters(delegate, zero_b, tmp_path):
    """Builtin kernel: the fixed-point result, one step off a single
    rounding at 94.498; XNNPACK (second operand's zero-point 0): one
    rounding, the float simulation's."""
    pytest.importorskip('ai_edge_litert.interpreter',
                        reason='LiteRT is not installed: run `make litert`')
    qparams = ((_SCALES[0], -60), (_SCALES[1], zero_b), (_SCALES[2], 3))
    a_q, b_q = _operands(-60, zero_b)
    runtime = _tflite_batch_matmul(a_q, b_q, qparams,
                                   tmp_path / 'mm.tflite', delegate)
    fq_a, fq_b, fq_out = (_fake_quant(*q) for q in qparams)
    a = fq_a((torch.from_numpy(a_q).float() + 60) * _SCALES[0])
    b = fq_b((torch.from_numpy(b_q).float() - zero_b) * _SCALES[1])
    product = a @ b
    simulated = fq_out(tflite_int8_matmul(product, a, b, fq_a, fq_b,
                                          fq_out, xnnpack=delegate))

    def to_int(y):
        return (torch.round(y / _SCALES[2]) + 3).long().numpy()

    np.testing.assert_array_equal(to_int(simulated), runtime)
    single = to_int(fq_out(product))  # the float simulation
    assert single[0, 0, 0, 0] == 94 + 3
    if delegate and zero_b == 0:
        np.testing.assert_array_equal(single, runtime)
    else:
        assert runtime[0, 0, 0, 0] == 95 + 3
        assert 1 <= (single != runtime).sum() < 0.02 * runtime.size


def test_gradient_is_the_float_matmuls():
    qparams = ((0.05, -3), (0.04, 7), (0.3, 1))
    fq_a, fq_b, fq_out = (_fake_quant(*q) for q in qparams)
    torch.manual_seed(0)
    a = torch.randn(2, 5, 8, requires_grad=True)
    b = torch.randn(2, 8, 5, requires_grad=True)
    weight = torch.randn(2, 5, 5)
    a_q, b_q = fq_a(a), fq_b(b)
    exact = tflite_int8_matmul(a_q @ b_q, a_q, b_q, fq_a, fq_b, fq_out)
    (exact * weight).sum().backward()
    grads = a.grad.clone(), b.grad.clone()
    with torch.no_grad():
        assert torch.equal(
            exact, tflite_int8_matmul(a_q @ b_q, a_q, b_q, fq_a, fq_b,
                                      fq_out))
        assert torch.equal(fq_out(exact), exact)  # already on the grid
    a.grad = b.grad = None
    ((fq_a(a) @ fq_b(b)) * weight).sum().backward()
    assert torch.equal(grads[0], a.grad) and torch.equal(grads[1], b.grad)


def test_float_while_observing_or_disabled():
    fq_a, fq_b, fq_out = (_fake_quant(0.05, 0) for _ in range(3))
    a, b = torch.randn(3, 4), torch.randn(4, 3)
    product = fq_a(a) @ fq_b(b)
    fq_out.enable_observer()
    assert tflite_int8_matmul(product, a, b, fq_a, fq_b,
                              fq_out) is product
    fq_out.disable_observer()
    fq_a.disable_fake_quant()
    assert tflite_int8_matmul(product, a, b, fq_a, fq_b,
                              fq_out) is product


def test_float_while_a_learnable_output_scale_trains():
    """LSQ's scale gradient needs the unrounded product; without gradients
    (evaluation) the integer result is used."""
    fq_a, fq_b = _fake_quant(0.05, 0), _fake_quant(0.04, 7)
    fq_out = LearnableFakeQuantize(
        observer=dict(type='mmrazor_quant.MinMaxObserver'),
        qscheme=_QSCHEME)
    torch.manual_seed(0)
    a, b = fq_a(torch.randn(6, 8)), fq_b(torch.randn(8, 6))
    fq_out(a @ b)  # calibrate
    fq_out.disable_observer()
    product = a @ b
    assert tflite_int8_matmul(product, a, b, fq_a, fq_b,
                              fq_out) is product
    with torch.no_grad():
        exact = tflite_int8_matmul(product, a, b, fq_a, fq_b, fq_out)
    assert exact is not product
    assert torch.equal(fq_out(exact), exact)
