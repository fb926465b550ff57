"""Checkpointing and error messages shared by every observer."""
import math

import pytest
import torch

from mmrazor_quant.models import observers as obs_mod
from mmrazor_quant.structures.quantization import QSchema

PER_TENSOR = [
    obs_mod.MinMaxObserver, obs_mod.MovingAverageMinMaxObserver,
    obs_mod.HistogramObserver, obs_mod.PercentileObserver,
    obs_mod.HistogramMSEObserver, obs_mod.KLObserver, obs_mod.MSEObserver,
    obs_mod.LSQObserver, obs_mod.LSQPlusObserver
]
PER_CHANNEL = [
    obs_mod.PerChannelMinMaxObserver,
    obs_mod.MovingAveragePerChannelMinMaxObserver,
    obs_mod.PerChannelMSEObserver, obs_mod.LSQPerChannelObserver,
    obs_mod.LSQPlusPerChannelObserver
]
ALL = PER_TENSOR + PER_CHANNEL


def make(cls, **scheme):
    scheme.setdefault('qdtype', 'qint8')
    return cls(QSchema(**scheme, is_per_channel=cls.per_channel))


def data(seed=0, shape=(4, 3, 6)):
    return torch.randn(shape, generator=torch.Generator().manual_seed(seed))


@pytest.mark.parametrize('cls', ALL, ids=lambda c: c.__name__)
def test_state_dict_round_trip(cls):
    obs = make(cls, ch_axis=1)
    obs(data(0))
    obs(data(1) * 2)
    fresh = make(cls, ch_axis=1)
    assert not fresh.has_observed
    fresh.load_state_dict(obs.state_dict())  # resizes per-channel buffers
    assert fresh.has_observed
    for ours, theirs in zip(fresh.calculate_qparams(),
                            obs.calculate_qparams()):
        assert torch.equal(ours, theirs)
    assert set(obs.state_dict()) == set(fresh.state_dict())


@pytest.mark.parametrize('cls', PER_CHANNEL, ids=lambda c: c.__name__)
def test_per_channel_shapes_come_from_data_and_checkpoint(cls):
    obs = make(cls, ch_axis=0)
    assert obs.min_val.shape == (0, )
    obs(data(shape=(5, 2)))
    assert obs.calculate_qparams()[0].shape == (5, )
    other = make(cls, ch_axis=0)
    other(data(shape=(3, 2)))
    other.load_state_dict(obs.state_dict())  # 3 -> 5 channels
    assert other.calculate_qparams()[0].shape == (5, )
    other.reset()
    assert other.min_val.shape == (0, ) and not other.has_observed


@pytest.mark.parametrize('cls', ALL, ids=lambda c: c.__name__)
@pytest.mark.parametrize('bad', [math.nan, math.inf, -math.inf])
def test_nan_inf_raise_and_leave_state_untouched(cls, bad):
    obs = make(cls)
    obs.name = 'backbone.conv1 (weight)'
    obs(data())
    before = {k: v.clone() for k, v in obs.state_dict().items()}
    x = data(1)
    x[1, 2, 3] = bad
    with pytest.raises(ValueError,
                       match=r'backbone\.conv1 \(weight\): observed NaN or '
                       r'inf values'):
        obs(x)
    for key, value in obs.state_dict().items():
        assert torch.equal(value, before[key]), key


@pytest.mark.parametrize('cls', ALL, ids=lambda c: c.__name__)
def test_empty_input_and_qparams_before_data_raise(cls):
    obs = make(cls)
    obs.name = 'neck.fc (activation)'
    with pytest.raises(ValueError, match=r'neck\.fc \(activation\): cannot '
                       r'observe an empty tensor'):
        obs(torch.empty(0, 3))
    assert not obs.has_observed
    with pytest.raises(ValueError, match=r'neck\.fc \(activation\): no data '
                       r'observed yet'):
        obs.calculate_qparams()


@pytest.mark.parametrize('cls', ALL, ids=lambda c: c.__name__)
def test_identity_forward_and_qparams_dtypes(cls):
    obs = make(cls, ch_axis=2)
    x = data()
    assert obs(x) is x
    s, z = obs.calculate_qparams()
    assert s.dtype == torch.float32 and z.dtype == torch.int32
    assert s.dim() == (1 if cls.per_channel else 0) == z.dim()
    assert (s > 0).all()


def test_granularity_mismatch_raises():
    with pytest.raises(ValueError, match=r'PerChannelMinMaxObserver is a '
                       r'per-channel observer'):
        obs_mod.PerChannelMinMaxObserver(QSchema(is_per_channel=False))
