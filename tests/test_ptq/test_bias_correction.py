"""Empirical bias correction removes the mean shift of a layer's output."""
import pytest

from mmrazor_quant.models.fake_quants import (
    disable_fake_quant,
    enable_fake_quant,
)
from mmrazor_quant.ptq import (
    correct_bias,
    output_channel_means,
    tensor_graph_module,
)
from .conftest import build_quantized, calibrate

LAYER = 'backbone.layer1.0.conv2'


def _means(model, name, x, quantized):
    gm = tensor_graph_module(model)
    (enable_fake_quant if quantized else disable_fake_quant)(gm)
    means = output_channel_means(gm, name, x)
    enable_fake_quant(gm)
    return means


@pytest.mark.parametrize('single_pass', [False, True])
def test_bias_correction_reduces_mean_output_error(float_state, digits,
                                                   single_pass):
    """Layer by layer, or all samples through the graph together (the same
    corrections from one pass)."""
    images = digits[0]
    model = calibrate(build_quantized(float_state, w_bit=3, a_bit=8),
                      images[:256])
    seen, unseen = images[:256], images[256:512]
    # reference: the float model before the correction
    float_seen = _means(model, LAYER, seen, False)
    float_unseen = _means(model, LAYER, unseen, False)
    before = float(
        (float_seen - _means(model, LAYER, seen, True)).abs().mean())
    before_unseen = float(
        (float_unseen - _means(model, LAYER, unseen, True)).abs().mean())
    corrected = correct_bias(model, [seen], num_samples=256,
                             layers=['backbone.conv1', LAYER],
                             single_pass=single_pass)
    assert corrected == ['backbone.conv1', LAYER]
    after = float((float_seen - _means(model, LAYER, seen, True)).abs().mean())
    after_unseen = float(
        (float_unseen - _means(model, LAYER, unseen, True)).abs().mean())
    assert after < 0.1 * before
    # also on digits it never saw
    assert after_unseen < 0.6 * before_unseen


def test_one_pass_gives_the_layer_by_layer_corrections(float_state, digits):
    import copy

    import torch
    model = calibrate(build_quantized(float_state, w_bit=3, a_bit=8),
                      digits[0][:128])
    twin = copy.deepcopy(model)
    names = correct_bias(model, [digits[0][:128]], num_samples=128,
                         batch_size=32)
    assert correct_bias(twin, [digits[0][:128]], num_samples=128,
                        batch_size=32, single_pass=True) == names
    assert len(names) == 21
    ours, theirs = dict(model.named_parameters()), dict(
        twin.named_parameters())
    # the same up to float32 summation order (the one pass adds the bias
    # change to the pre-activation it computed; a value on a rounding tie
    # of a later fake quant may then move a step: 4e-5 at the last layer)
    for key, value in ours.items():
        torch.testing.assert_close(theirs[key], value, rtol=0, atol=2e-4,
                                   msg=key)


def test_channel_means_of_a_linear_layer_over_tokens():
    """A linear layer on [N, tokens, C] has its channels last: the means
    are over N and the tokens (a transformer's, or an imported CTC head's
    layers)."""
    import torch
    from torch import fx, nn
    torch.manual_seed(0)
    gm = fx.symbolic_trace(nn.Sequential(nn.Linear(4, 3), nn.ReLU()))
    x = torch.randn(6, 5, 4)
    means = output_channel_means(gm, '0', x, batch_size=4)
    expected = gm.get_submodule('0')(x).mean(dim=(0, 1))
    torch.testing.assert_close(means, expected)


def test_all_layers_means_in_one_pass_equal_one_layer_at_a_time(
        float_state, digits):
    from mmrazor_quant.ptq.bias_correction import all_output_channel_means
    model = calibrate(build_quantized(float_state, w_bit=4, a_bit=8),
                      digits[0][:64])
    gm = tensor_graph_module(model)
    names = ['backbone.conv1', LAYER, 'backbone.layer2.0.conv1']
    together = all_output_channel_means(gm, names, digits[0][:64], 16)
    for name in names:
        torch_close(together[name],
                    output_channel_means(gm, name, digits[0][:64], 16))


def torch_close(a, b):
    import torch
    torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)


def test_means_recorded_during_calibration_give_the_same_corrections(
        float_state, digits):
    """Bias correction takes the float means calibration saw (the front
    door's path) instead of a float pass of its own: the same biases up to
    float32 summation order; means of other samples are not used."""
    import copy

    from mmrazor_quant.ptq.bias_correction import record_float_means
    from mmrazor_quant.ptq.pipeline import (
        build_ptq_passes,
        recording_during_calibration,
    )
    images = digits[0][:128]
    fresh = build_quantized(float_state, w_bit=3, a_bit=8)
    passes = build_ptq_passes([dict(type='correct_bias', single_pass=True,
                                    batch_size=32)])
    recorded = copy.deepcopy(fresh)
    with recording_during_calibration(recorded, passes):
        calibrate(recorded, images)
    assert passes[0].recorded['float_means'].num_samples == 128
    plain = calibrate(copy.deepcopy(fresh), images)
    passes[0](recorded, [images])
    correct_bias(plain, [images], batch_size=32, single_pass=True)
    _assert_same_parameters(recorded, plain, atol=2e-4)
    other = copy.deepcopy(fresh)
    with record_float_means(other) as recorder:
        calibrate(other, digits[0][128:192])
    assert recorder.num_samples == 64
    twin = copy.deepcopy(other)
    correct_bias(other, [images], batch_size=32, single_pass=True,
                 float_means=recorder)
    correct_bias(twin, [images], batch_size=32, single_pass=True)
    _assert_same_parameters(other, twin, atol=0)




def test_recorded_means_of_a_drawn_subset(float_state, digits):
    """Correcting from a seeded draw of the calibration samples takes the
    recorded float means of exactly those samples: the same biases as a
    float pass of its own over them (float32 summation order); the
    subset's means differ from all samples'."""
    import copy

    from mmrazor_quant.ptq.bias_correction import record_float_means
    from mmrazor_quant.ptq.reconstruction import sample_indices
    images = digits[0][:128]
    picked = sample_indices(128, 32, seed=3)
    assert len(set(picked.tolist())) == 32 and int(picked.max()) < 128
    model = build_quantized(float_state, w_bit=3, a_bit=8)
    with record_float_means(model) as recorder:
        calibrate(model, images)
    assert recorder.num_samples == 128
    own_pass = copy.deepcopy(model)
    correct_bias(model, [images], num_samples=32, seed=3, batch_size=16,
                 single_pass=True, float_means=recorder)
    correct_bias(own_pass, [images], num_samples=32, seed=3, batch_size=16,
                 single_pass=True)
    _assert_same_parameters(model, own_pass, atol=2e-4)
    # the subset's means, not all 128 samples': a bias moves by more
    subset = recorder.means(picked)
    everything = recorder.means()
    assert max(float((subset[n] - everything[n]).abs().max())
               for n in subset) > 1e-2


def _assert_same_parameters(model, other, atol):
    import torch
    theirs = dict(other.named_parameters())
    for key, value in model.named_parameters():
        torch.testing.assert_close(value, theirs[key], rtol=0, atol=atol,
                                   msg=key)
