"""AdaRound: hard floor/ceil rounding, lower layer-output error than
nearest rounding, deterministic, baked into the weights."""
import copy

import pytest
import torch

from mmrazor_quant.models.fake_quants import (
    AdaRoundFakeQuantize,
    FakeQuantize,
    disable_fake_quant,
    enable_fake_quant,
)
from mmrazor_quant.models.fake_quants.adaround import (
    rectified_sigmoid,
    rounding_regularizer,
)
from mmrazor_quant.ptq import adaround, tensor_graph_module
from mmrazor_quant.ptq.graph_utils import capture
from .conftest import build_quantized, calibrate

LAYER = 'backbone.layer1.0.conv2'


def test_rectified_sigmoid_and_regularizer():
    v = torch.tensor([-100., 0., 100.])
    torch.testing.assert_close(rectified_sigmoid(v), torch.tensor([0, .5, 1]))
    # 0 at h in {0, 1}; 1 at h = 1/2
    assert float(rounding_regularizer(torch.tensor([-100., 100.]), 2)) == 0
    assert float(rounding_regularizer(torch.tensor([0.]), 20)) == 1


def _layer_mse(model, name, x):
    gm = tensor_graph_module(model)
    node = next(n for n in gm.graph.nodes if n.target == name)
    disable_fake_quant(gm)
    target, = capture(gm, [node], x)
    enable_fake_quant(gm)
    out, = capture(gm, [node], x)
    return float((out - target).pow(2).mean())


@pytest.fixture(scope='module')
def calibrated(float_state, digits):
    return calibrate(build_quantized(float_state, w_bit=3, a_bit=8),
                     digits[0][:256])


@pytest.mark.slow
def test_adaround_floor_or_ceil_and_lower_mse(calibrated, digits):
    images = digits[0][:256]
    nearest = copy.deepcopy(calibrated)
    model = copy.deepcopy(calibrated)
    gm = tensor_graph_module(model)
    layer = gm.get_submodule(LAYER)
    folded = layer.get_folded_weight_bias()[0].clone()
    units = adaround(model, [images], iters=25, num_samples=128,
                     batch_size=32)
    assert LAYER in units and len(units) == 21  # 20 convs + fc
    # original fake quant restored, weight on its grid
    fq = layer.weight_fake_quant
    assert type(fq) is FakeQuantize
    scale = fq.scale.reshape(-1, 1, 1, 1)
    new_folded = layer.get_folded_weight_bias()[0]
    q = new_folded / scale
    assert torch.allclose(q, q.round(), atol=1e-3)
    zp = fq.zero_point.reshape(-1, 1, 1, 1)
    q = q.round()
    floor = (folded / scale).floor()
    clipped = (q + zp == fq.quant_min) | (q + zp == fq.quant_max)
    assert (((q == floor) | (q == floor + 1)) | clipped).all()
    # some weights were rounded away from nearest (else nothing learned)
    assert (q != (folded / scale).round()).any()
    assert _layer_mse(model, LAYER, images) < _layer_mse(
        nearest, LAYER, images)


def test_adaround_deterministic_and_direct_fake_quant(float_state, digits):
    images = digits[0][:64]
    results = []
    for _ in range(2):
        model = calibrate(
            build_quantized(float_state, w_bit=3, a_bit=8,
                            fake_quant='AdaRoundFakeQuantize'), images)
        adaround(model, [images], iters=2, num_samples=32, seed=3)
        layer = tensor_graph_module(model).get_submodule(LAYER)
        # configured AdaRound fake quants stay, in nearest mode
        assert isinstance(layer.weight_fake_quant, AdaRoundFakeQuantize)
        assert layer.weight_fake_quant.rounding == 'nearest'
        results.append(model(images[:8], mode='tensor'))
    torch.testing.assert_close(results[0], results[1], rtol=0, atol=0)
