"""FakeQuantize and the BaseFakeQuantize machinery it inherits."""
import pytest
import torch

from mmrazor_quant.models.fake_quants import FakeQuantize
from mmrazor_quant.registry import MODELS
from mmrazor_quant.structures.quantization import QSchema, calculate_qparams
from .helpers import observer
from .reference import fake_quant_ref


def test_observer_then_fake_quant_matches_formula():
    fq = FakeQuantize(observer(bit=4, qdtype='quint8'))
    x = torch.randn(16, 3)
    y = fq(x)
    scale, zp = calculate_qparams(x.min(), x.max(), fq.qscheme)
    assert fq.scale.shape == () and fq.zero_point.shape == ()
    assert fq.scale.dtype == torch.float32 and fq.zero_point.dtype == \
        torch.int32
    torch.testing.assert_close(fq.scale, scale, atol=0, rtol=0)
    assert fq.zero_point.item() == zp.item()
    assert fq.is_initialized
    torch.testing.assert_close(y, fake_quant_ref(x, scale, zp, 0, 15),
                               atol=0, rtol=0)


@pytest.mark.parametrize('ch_axis', [0, 1])
def test_per_channel_on_any_axis(ch_axis):
    fq = FakeQuantize(
        observer(per_channel=True, qdtype='qint8', bit=8, is_symmetry=True,
                 ch_axis=ch_axis))
    x = torch.randn(4, 6, 3) * torch.arange(1., 7.).reshape(1, 6, 1)
    y = fq(x)
    assert fq.scale.shape == (x.shape[ch_axis], )
    flat = x.movedim(ch_axis, 0).flatten(1)
    scale, zp = calculate_qparams(flat.min(1).values, flat.max(1).values,
                                  fq.qscheme)
    torch.testing.assert_close(fq.scale, scale, atol=0, rtol=0)
    torch.testing.assert_close(
        y, fake_quant_ref(x, scale, zp, -128, 127, ch_axis), atol=0, rtol=0)


def test_half_away_rounding_from_the_scheme():
    qscheme = dict(qdtype='qint8', bit=8, is_symmetry=True,
                   is_symmetric_range=True, rounding='half_away_from_zero')
    fq = FakeQuantize(observer(**qscheme))
    x = torch.tensor([-127., 0.5, 1.5, 2.5, 127.]) / 4  # scale is 1/4
    y = fq(x)
    assert fq.scale.item() == 0.25
    assert (y * 4).tolist() == [-127., 1., 2., 3., 127.]
    fq.qscheme = fq.qscheme.replace(rounding='half_even')
    assert (fq(x) * 4).tolist() == [-127., 0., 2., 2., 127.]


def test_observer_switch_freezes_qparams():
    fq = FakeQuantize(observer(bit=8))
    fq(torch.tensor([0., 1.]))
    frozen = fq.scale.clone()
    fq.disable_observer()
    y = fq(torch.tensor([0., 10.]))
    assert torch.equal(fq.scale, frozen)
    assert y[1].item() == pytest.approx(1.0)  # clipped at the old range
    assert fq.observer.max_val.item() == 1.0  # the observer saw nothing
    fq.enable_observer()
    fq(torch.tensor([0., 10.]))
    assert fq.scale.item() == pytest.approx(10. / 255)


def test_fake_quant_switch_returns_input_but_still_observes():
    fq = FakeQuantize(observer(bit=2))
    fq.disable_fake_quant()
    x = torch.randn(10)
    assert fq(x) is x
    assert fq.is_initialized  # the observer still ran
    fq.enable_fake_quant()
    assert not torch.equal(fq(x), x)


def test_uncalibrated_forward_and_get_qparams_raise_with_name():
    fq = FakeQuantize(observer())
    fq.name = 'backbone.conv1 (weight)'
    assert fq.observer.name == 'backbone.conv1 (weight)'
    with pytest.raises(RuntimeError,
                       match=r'backbone\.conv1 \(weight\) has no qparams'):
        fq.get_qparams()
    fq.disable_observer()
    with pytest.raises(RuntimeError, match='was never calibrated'):
        fq(torch.randn(3))
    fq.disable_fake_quant()
    fq(torch.randn(3))  # a float pass-through is fine


def test_get_qparams_returns_detached_copies():
    fq = FakeQuantize(observer(per_channel=True, qdtype='qint8'))
    fq(torch.randn(3, 5))
    scale, zp = fq.get_qparams()
    assert scale.dtype == torch.float32 and zp.dtype == torch.int32
    assert scale.shape == zp.shape == (3, )
    scale.mul_(2)
    assert not torch.equal(scale, fq.scale)


def test_state_dict_round_trip_resizes_per_channel_buffers():
    src = FakeQuantize(observer(per_channel=True, qdtype='qint8', bit=4))
    src(torch.randn(7, 2, 3))
    dst = FakeQuantize(observer(per_channel=True, qdtype='qint8', bit=4))
    assert dst.scale.shape == (0, )
    dst.load_state_dict(src.state_dict())
    assert dst.scale.shape == (7, ) and dst.is_initialized
    for name in ('scale', 'zero_point'):
        torch.testing.assert_close(getattr(dst, name), getattr(src, name),
                                   atol=0, rtol=0)
    dst.disable_observer()
    src.disable_observer()
    x = torch.randn(7, 2, 3)
    torch.testing.assert_close(dst(x), src(x), atol=0, rtol=0)


def test_load_accepts_shape_1_per_tensor_qparams():
    fq = FakeQuantize(observer())
    fq(torch.randn(4))
    state = fq.state_dict()
    state['scale'] = torch.tensor([0.5])  # torch / MMRazor layout
    state['zero_point'] = torch.tensor([3])
    fresh = FakeQuantize(observer())
    fresh.load_state_dict(state)
    assert fresh.scale.shape == () and fresh.scale.item() == 0.5
    assert fresh.zero_point.item() == 3


def test_init_qparams_shape():
    fq = FakeQuantize(observer(per_channel=True))
    fq.init_qparams_shape(5)
    assert fq.scale.tolist() == [1.] * 5 and fq.zero_point.tolist() == [0] * 5
    fq.scale.fill_(2.)
    fq.init_qparams_shape(5)  # already sized: values kept
    assert fq.scale.tolist() == [2.] * 5
    per_tensor = FakeQuantize(observer())
    per_tensor.init_qparams_shape(5)
    assert per_tensor.scale.shape == ()
    with pytest.raises(ValueError, match='num_channels must be a positive'):
        fq.init_qparams_shape(0)


def test_default_zero_point_lies_in_the_range():
    fq = FakeQuantize(observer(qdtype='qint8'))
    assert fq.zero_point.item() == 0
    fq = FakeQuantize(observer(qdtype='quint8'))
    assert fq.zero_point.item() == 0


def test_build_from_config_with_dict_observer():
    fq = MODELS.build(
        dict(type='mmrazor_quant.FakeQuantize',
             observer=dict(type='MinMaxObserver'),
             qscheme=dict(qdtype='qint8', bit=4, is_symmetry=True)))
    assert type(fq.observer).__name__ == 'MinMaxObserver'
    assert fq.observer.qscheme == fq.qscheme == QSchema(
        qdtype='qint8', bit=4, is_symmetry=True, is_per_channel=False)
    assert fq.quant_min == -8 and fq.quant_max == 7


def test_a_fake_quant_needs_an_observer_or_a_qscheme():
    with pytest.raises(ValueError, match='needs an observer or a qscheme'):
        FakeQuantize(None)


def _histogram_fq():
    return FakeQuantize(dict(type='mmrazor_quant.HistogramMSEObserver',
                             bins=256, num_candidates=20))


def _calibrate(fq, batches):
    fq.enable_observer()
    fq.disable_fake_quant()
    for x in batches:
        assert torch.equal(fq(x), x)


def test_histogram_qparams_searched_once_when_next_needed(monkeypatch):
    """A histogram observer's range search runs once after a calibration
    with fake quantization off, not after every batch, and gives the
    qparams of its final histogram (those computed after each batch)."""
    torch.manual_seed(0)
    batches = [torch.randn(64, 8) * (1 + i) for i in range(5)]
    eager = _histogram_fq()
    for x in batches:  # fake quantization on: qparams after every batch
        eager(x)
    lazy = _histogram_fq()
    calls = []
    search = type(lazy.observer)._search_range
    monkeypatch.setattr(type(lazy.observer), '_search_range',
                        lambda self: calls.append(1) or search(self))
    _calibrate(lazy, batches)
    assert calls == []
    lazy.disable_observer()  # as calibrate() ends
    assert len(calls) == 1
    torch.testing.assert_close(lazy.scale, eager.scale, atol=0, rtol=0)
    assert lazy.zero_point.item() == eager.zero_point.item()


@pytest.mark.parametrize('read', [
    lambda fq: fq.is_initialized,
    lambda fq: fq.get_qparams()[0],
    lambda fq: fq.state_dict()['scale'],
    lambda fq: fq.sync_qparams(),
    lambda fq: fq.enable_fake_quant(),
])
def test_deferred_qparams_are_taken_by_every_reader(read):
    torch.manual_seed(0)
    x = torch.randn(64, 8) * 3
    fq = _histogram_fq()
    _calibrate(fq, [x])
    assert fq.scale.item() == 1.0  # not yet searched
    read(fq)
    expected, _ = fq.observer.calculate_qparams()
    torch.testing.assert_close(fq.scale, expected, atol=0, rtol=0)
    assert fq.scale.item() != 1.0 and fq.is_initialized


def test_loaded_qparams_replace_deferred_ones():
    torch.manual_seed(0)
    source = _histogram_fq()
    source(torch.randn(32, 4) * 5)
    fq = _histogram_fq()
    _calibrate(fq, [torch.randn(32, 4)])
    fq.load_state_dict(source.state_dict())
    fq.disable_observer()
    torch.testing.assert_close(fq.scale, source.scale, atol=0, rtol=0)


@pytest.mark.parametrize('writes', range(4))
def test_a_copy_reads_its_switches_afresh(writes):
    """A copy's buffers restart their version counters: a flag cached on
    the original must not be taken for the copy's (a deep copy of a
    calibrated model once ran with its observers on)."""
    import copy
    fq = FakeQuantize(observer(bit=8, qdtype='quint8'))
    fq(torch.randn(4, 3))
    assert fq.observer_on and fq.fake_quant_on and fq.is_initialized
    for i in range(writes + 1):  # written behind the cache's back
        fq.observer_enabled.fill_(i % 2)
        fq.fake_quant_enabled.fill_((i + 1) % 2)
    fq.disable_observer()
    twin = copy.deepcopy(fq)
    assert '_flag_cache' not in twin.__dict__
    for flag in ('observer_enabled', 'fake_quant_enabled', 'initialized'):
        assert twin._flag(flag) == bool(getattr(twin, flag)[0]) == \
            fq._flag(flag)
