"""Fast bias correction: the weight grid's mean shift from the float
inputs' channel means, against its closed form."""
import copy

import pytest
import torch
from torch import fx, nn

from mmrazor_quant.models.fake_quants import (
    disable_fake_quant,
    enable_fake_quant,
)
from mmrazor_quant.models.qat_modules import QATConv2d, QATLinear
from mmrazor_quant.ptq import fast_correct_bias, tensor_graph_module
from mmrazor_quant.ptq.fast_bias_correction import (
    InputChannelMeans,
    weight_shift,
)
from .conftest import build_quantized, calibrate


def _calibrated(layer: nn.Module) -> nn.Module:
    """``layer`` with a 3-bit per-channel weight grid, calibrated."""
    from mmrazor_quant.models.fake_quants import FakeQuantize
    fake_quant = FakeQuantize(
        dict(type='mmrazor_quant.PerChannelMinMaxObserver'),
        dict(qdtype='qint8', bit=3, is_symmetry=True, is_per_channel=True))
    qat_cls = QATLinear if isinstance(layer, nn.Linear) else QATConv2d
    qat = qat_cls.from_float(layer, fake_quant).eval()
    with torch.no_grad():
        qat(torch.zeros(1, *([layer.in_features] if isinstance(
            layer, nn.Linear) else [layer.in_channels, 4, 4])))
    qat.weight_fake_quant.disable_observer()
    return qat


def _weight_error(qat: nn.Module) -> torch.Tensor:
    return (qat.weight - qat.weight_fake_quant(qat.weight)).detach()


def test_linear_layer_shift_is_the_weight_error_times_the_input_mean():
    torch.manual_seed(0)
    qat = _calibrated(nn.Linear(6, 4))
    mean = torch.randn(6)
    expected = _weight_error(qat) @ mean
    torch.testing.assert_close(weight_shift(qat, mean, (5, 6)), expected,
                               rtol=1e-5, atol=1e-6)


def test_padded_conv_shift_counts_the_taps_inside_the_input():
    """3x3, padding 1, stride 1 on H x W: a tap ``(dh, dw)`` away from the
    centre reads the input at ``(H - |dh|) (W - |dw|)`` of the H W output
    positions (zeros elsewhere)."""
    torch.manual_seed(0)
    qat = _calibrated(nn.Conv2d(3, 5, 3, padding=1))
    mean = torch.randn(3)
    h, w = 6, 9
    error = _weight_error(qat)
    inside = torch.tensor([[(h - abs(i - 1)) * (w - abs(j - 1)) / (h * w)
                            for j in range(3)] for i in range(3)])
    expected = (error * mean.view(1, 3, 1, 1) * inside).sum((1, 2, 3))
    torch.testing.assert_close(weight_shift(qat, mean, (3, h, w)), expected,
                               rtol=1e-5, atol=1e-6)


def test_recorded_input_means_are_the_float_inputs_means():
    """Per channel over samples and positions; [N, tokens, C] for a linear
    layer; the sample shape of the first batch."""
    torch.manual_seed(0)
    gm = fx.symbolic_trace(
        nn.Sequential(nn.Conv2d(2, 3, 1), nn.Flatten(2), nn.Linear(16, 4)))
    x = torch.randn(10, 2, 4, 4)
    with InputChannelMeans(gm, ['0', '2']) as recorder:
        gm(x[:6])
        gm(x[6:])
    means = recorder.means()
    assert recorder.num_samples == 10
    torch.testing.assert_close(means['0'][0], x.mean((0, 2, 3)))
    assert means['0'][1] == (2, 4, 4)
    tokens = gm.get_submodule('1')(gm.get_submodule('0')(x))
    torch.testing.assert_close(means['2'][0], tokens.mean((0, 1)))
    assert means['2'][1] == (3, 16)


def test_means_recorded_during_calibration_give_the_same_corrections(
        float_state, digits):
    """The front door's path: the pass takes the input means the
    calibration recorded instead of a float pass of its own; afterwards
    each quantized layer, fed its float input's mean, gives the float
    layer's mean output (what the correction is for)."""
    from mmrazor_quant.ptq.pipeline import (
        build_ptq_passes,
        recording_during_calibration,
    )
    images = digits[0][:64]
    fresh = build_quantized(float_state, w_bit=3, a_bit=8)
    passes = build_ptq_passes([dict(type='fast_correct_bias')])
    recorded = copy.deepcopy(fresh)
    with recording_during_calibration(recorded, passes):
        calibrate(recorded, images)
    assert passes[0].recorded['input_means'].num_samples == 64
    plain = calibrate(copy.deepcopy(fresh), images)
    gm = tensor_graph_module(recorded)
    means = passes[0].recorded['input_means'].means()
    disable_fake_quant(gm)
    float_out = {name: _blob_output_mean(gm, name, *means[name])
                 for name in means}
    enable_fake_quant(gm)
    assert passes[0](recorded, [images]) == list(means)
    assert len(means) == 21
    for name, expected in float_out.items():
        torch.testing.assert_close(
            _blob_output_mean(gm, name, *means[name]), expected, rtol=0,
            atol=1e-4, msg=name)
    fast_correct_bias(plain, [images])
    ours, theirs = dict(recorded.named_parameters()), dict(
        plain.named_parameters())
    for key, value in ours.items():
        torch.testing.assert_close(theirs[key], value, rtol=0, atol=1e-5,
                                   msg=key)


def _blob_output_mean(gm, name, mean, shape):
    from mmrazor_quant.ptq.bias_correction import _channel_sums, preactivation
    from mmrazor_quant.ptq.fast_bias_correction import _mean_blob
    module = gm.get_submodule(name)
    with torch.no_grad():
        total, count = _channel_sums(
            module, preactivation(module, _mean_blob(module, mean, shape)))
    return total / count


class _LeafTracer(fx.Tracer):

    def is_leaf_module(self, module, name):
        return getattr(module, 'is_fx_leaf', False) or \
            super().is_leaf_module(module, name)


def test_unknown_layer_is_named():
    root = nn.Sequential(_calibrated(nn.Linear(3, 2)))
    gm = fx.GraphModule(root, _LeafTracer().trace(root))
    assert fast_correct_bias(gm, [torch.randn(4, 3)]) == ['0']
    with pytest.raises(ValueError, match='nope'):
        fast_correct_bias(gm, [torch.randn(4, 3)], layers=['nope'])
