"""MinMax / MovingAverage / PerChannel observers: closed forms and torch.ao."""
import pytest
import torch

from mmrazor_quant.models.observers import (
    MinMaxObserver,
    MovingAverageMinMaxObserver,
    MovingAveragePerChannelMinMaxObserver,
    PerChannelMinMaxObserver,
)
from mmrazor_quant.registry import MODELS
from mmrazor_quant.structures.quantization import QSchema

X = torch.tensor([[-1.0, 0.5], [3.0, 0.0]])  # min -1, max 3


def qparams(obs, *batches):
    for batch in batches:
        obs(batch)
    return obs.calculate_qparams()


@pytest.mark.parametrize(
    'scheme, scale, zero_point',
    [
        # asymmetric quint8: (3 - -1) / 255, 0 - round(-1 / s) = 64
        (dict(), 4 / 255, 64),
        # signed symmetric, full range: 3 / 127.5
        (dict(qdtype='qint8', is_symmetry=True), 3 / 127.5, 0),
        # signed symmetric range [-127, 127]: 3 / 127
        (dict(qdtype='qint8', is_symmetry=True, is_symmetric_range=True),
         3 / 127, 0),
        # 4-bit asymmetric quint8 [0, 15]: 4 / 15, round(3.75) = 4
        (dict(bit=4), 4 / 15, 4),
        # 4-bit signed symmetric [-7, 7]: 3 / 7
        (dict(qdtype='qint8', bit=4, is_symmetry=True,
              is_symmetric_range=True), 3 / 7, 0),
        # unsigned symmetric with negatives: amax / 127.5, zp 128
        (dict(is_symmetry=True), 3 / 127.5, 128),
        # pot: 3 / 127.5 = 0.0235 -> 2^-5
        (dict(qdtype='qint8', is_symmetry=True, is_pot_scale=True),
         2.0**-5, 0),
        # pot asymmetric: 4 / 255 = 0.0157 -> 2^-5 (rounds up), zp = 32
        (dict(is_pot_scale=True), 2.0**-5, 32),
    ])
def test_minmax_closed_form(scheme, scale, zero_point):
    s, z = qparams(MinMaxObserver(QSchema(**scheme)), X)
    assert s.shape == () and z.shape == ()
    assert s.dtype == torch.float32 and z.dtype == torch.int32
    assert s.item() == pytest.approx(scale, rel=1e-6)
    assert z.item() == zero_point


def test_minmax_running_extremes():
    obs = MinMaxObserver()
    qparams(obs, torch.tensor([0.5, 2.0]), torch.tensor([-1.0, 1.0]))
    assert obs.min_val.item() == -1.0 and obs.max_val.item() == 2.0


def test_unsigned_symmetric_nonnegative_uses_quant_min():
    # Deliberately unlike torch.ao (which puts zp at 128): after a ReLU the
    # whole unsigned range is used, zp = quant_min, scale = max / 255.
    s, z = qparams(MinMaxObserver(QSchema(is_symmetry=True)),
                   torch.tensor([0.0, 1.0, 2.55]))
    assert s.item() == pytest.approx(2.55 / 255, rel=1e-6)
    assert z.item() == 0


@pytest.mark.parametrize(
    'ch_axis, scales, zero_points',
    [
        # channels along axis 0: [-1, 0.5] and [0 (3 -> clamp), 3]
        (0, [1.5 / 255, 3 / 255], [170, 0]),
        # channels along axis 1: [-1, 3] and [0, 0.5]
        (1, [4 / 255, 0.5 / 255], [64, 0]),
    ])
def test_per_channel_closed_form(ch_axis, scales, zero_points):
    obs = PerChannelMinMaxObserver(QSchema(ch_axis=ch_axis))
    assert obs.min_val.shape == (0, )  # sized by the data, not hard-coded
    s, z = qparams(obs, X)
    assert s.shape == (2, ) and z.shape == (2, )
    torch.testing.assert_close(s, torch.tensor(scales))
    assert z.tolist() == zero_points


def test_per_channel_symmetric_4bit_negative_axis():
    x = torch.tensor([[[-2.0, 1.0]], [[0.5, 7.0]]])  # channels on axis -1
    scheme = QSchema(qdtype='qint8', bit=4, is_symmetry=True,
                     is_symmetric_range=True, ch_axis=-1)
    s, z = qparams(PerChannelMinMaxObserver(scheme), x)
    torch.testing.assert_close(s, torch.tensor([2 / 7, 7 / 7]))
    assert z.tolist() == [0, 0]


def test_moving_average_closed_form():
    obs = MovingAverageMinMaxObserver(averaging_constant=0.5)
    qparams(obs, torch.tensor([-1.0, 1.0]), torch.tensor([-3.0, 5.0]))
    # first batch sets (-1, 1); then -1 + 0.5 * (-3 + 1), 1 + 0.5 * (5 - 1)
    assert obs.min_val.item() == -2.0 and obs.max_val.item() == 3.0
    with pytest.raises(ValueError, match=r'averaging_constant must be in'):
        MovingAverageMinMaxObserver(averaging_constant=0.)


def test_per_channel_channel_count_change_raises():
    obs = PerChannelMinMaxObserver()
    obs(torch.ones(3, 2))
    with pytest.raises(ValueError, match=r'expected 3 channels .* got 4'):
        obs(torch.ones(4, 2))
    with pytest.raises(ValueError, match=r'ch_axis=2 is out of range'):
        PerChannelMinMaxObserver(QSchema(ch_axis=2))(torch.ones(3, 2))


def test_build_from_registry_with_scope():
    obs = MODELS.build(
        dict(type='mmrazor_quant.MovingAverageMinMaxObserver',
             averaging_constant=0.1,
             qscheme=dict(qdtype='qint8', is_symmetry=True)))
    assert isinstance(obs, MovingAverageMinMaxObserver)
    assert obs.averaging_constant == 0.1 and obs.quant_min == -128


# -- torch.ao as an oracle ------------------------------------------------
ao = pytest.importorskip('torch.ao.quantization.observer')

ORACLE_SCHEMES = [
    (dict(), dict(dtype=torch.quint8, qscheme=torch.per_tensor_affine)),
    (dict(qdtype='qint8', is_symmetry=True),
     dict(dtype=torch.qint8, qscheme=torch.per_tensor_symmetric)),
    (dict(qdtype='qint8', is_symmetry=True, is_symmetric_range=True),
     dict(dtype=torch.qint8, qscheme=torch.per_tensor_symmetric,
          quant_min=-127, quant_max=127)),
    (dict(bit=4), dict(dtype=torch.quint8, qscheme=torch.per_tensor_affine,
                       quant_min=0, quant_max=15)),
    (dict(qdtype='qint8'), dict(dtype=torch.qint8,
                                qscheme=torch.per_tensor_affine)),
]


def batches(shape=(4, 3, 5), n=3):
    gen = torch.Generator().manual_seed(0)
    return [torch.randn(shape, generator=gen) * (i + 1) + 0.3 * i
            for i in range(n)]


def per_channel_kwargs(kwargs, ch_axis):
    qscheme = {torch.per_tensor_affine: torch.per_channel_affine,
               torch.per_tensor_symmetric: torch.per_channel_symmetric}
    return dict(kwargs, qscheme=qscheme[kwargs['qscheme']], ch_axis=ch_axis)


def assert_same_qparams(ours, theirs, data):
    for batch in data:
        ours(batch)
        theirs(batch)
    s, z = ours.calculate_qparams()
    ts, tz = theirs.calculate_qparams()
    torch.testing.assert_close(s, ts.reshape(s.shape), rtol=1e-6, atol=0)
    assert torch.equal(z, tz.int().reshape(z.shape))


@pytest.mark.parametrize('scheme, ao_kwargs', ORACLE_SCHEMES)
def test_against_torch_ao_per_tensor(scheme, ao_kwargs):
    assert_same_qparams(MinMaxObserver(QSchema(**scheme)),
                        ao.MinMaxObserver(**ao_kwargs), batches())
    assert_same_qparams(
        MovingAverageMinMaxObserver(QSchema(**scheme), 0.1),
        ao.MovingAverageMinMaxObserver(averaging_constant=0.1, **ao_kwargs),
        batches())


@pytest.mark.parametrize('ch_axis', [0, 1])
@pytest.mark.parametrize('scheme, ao_kwargs', ORACLE_SCHEMES)
def test_against_torch_ao_per_channel(scheme, ao_kwargs, ch_axis):
    ours = QSchema(**scheme, ch_axis=ch_axis)
    theirs = per_channel_kwargs(ao_kwargs, ch_axis)
    assert_same_qparams(PerChannelMinMaxObserver(ours),
                        ao.PerChannelMinMaxObserver(**theirs), batches())
    assert_same_qparams(
        MovingAveragePerChannelMinMaxObserver(ours, 0.1),
        ao.MovingAveragePerChannelMinMaxObserver(
            averaging_constant=0.1, **theirs), batches())


@pytest.mark.parametrize('ch_axis', [0, 1, -1])
def test_per_channel_min_max_equal_aminmax(ch_axis):
    """amin/amax (the fast reduction) give aminmax's values."""
    from mmrazor_quant.models.observers import PerChannelMinMaxObserver
    gen = torch.Generator().manual_seed(0)
    obs = PerChannelMinMaxObserver(
        QSchema(is_per_channel=True, ch_axis=ch_axis))
    x = torch.randn(6, 5, 4, generator=gen)
    obs(x)
    view = x.movedim(ch_axis, 0).reshape(x.shape[ch_axis], -1)
    min_val, max_val = torch.aminmax(view, dim=-1)
    assert torch.equal(obs.min_val, min_val)
    assert torch.equal(obs.max_val, max_val)
