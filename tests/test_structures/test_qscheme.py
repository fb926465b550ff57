"""QSchema ranges and validation; qparams math against the closed form."""
import pytest
import torch

from mmrazor_quant.structures.quantization import (
    PerChannel,
    PerTensor,
    QSchema,
    RoundingPolicy,
    calculate_qparams,
)


@pytest.mark.parametrize('cfg,expected', [
    (dict(qdtype='quint8', bit=8), (0, 255)),
    (dict(qdtype='qint8', bit=8), (-128, 127)),
    (dict(qdtype='qint8', bit=8, is_symmetric_range=True), (-127, 127)),
    (dict(qdtype='qint8', bit=4), (-8, 7)),
    (dict(qdtype='quint8', bit=4), (0, 15)),
    (dict(qdtype='quint8', bit=2, is_symmetric_range=True), (0, 2)),
    (dict(qdtype='qint8', bit=16), (-32768, 32767)),
])
def test_quant_range(cfg, expected):
    assert QSchema.from_dict(cfg).quant_range == expected


def test_extra_keys_go_to_the_observer():
    qs = QSchema.from_dict(dict(qdtype='quint8', averaging_constant=0.1))
    assert qs.observer_kwargs == {'averaging_constant': 0.1}


@pytest.mark.parametrize('bit', [1, 17, 8.0, True])
def test_bit_out_of_range(bit):
    with pytest.raises(ValueError, match=r'qscheme.bit must be an int in '
                       r'\[2, 16\]'):
        QSchema(bit=bit)


def test_bad_fields():
    with pytest.raises(ValueError, match='qscheme.qdtype must be one of'):
        QSchema(qdtype='int8')
    with pytest.raises(ValueError, match='qscheme.rounding must be one of'):
        QSchema(rounding='up')
    with pytest.raises(TypeError, match='qscheme.is_symmetry must be a bool'):
        QSchema(is_symmetry='yes')


def test_granularity_objects():
    assert QSchema().granularity == PerTensor()
    assert QSchema(is_per_channel=True, ch_axis=1).granularity == \
        PerChannel(1)
    assert QSchema(rounding='half_away_from_zero').rounding is \
        RoundingPolicy.HALF_AWAY_FROM_ZERO


def test_qparams_asymmetric_closed_form():
    scale, zp = calculate_qparams(
        torch.tensor(-1.0), torch.tensor(3.0), QSchema(qdtype='quint8'))
    assert scale.item() == pytest.approx(4.0 / 255)
    assert zp.item() == round(1.0 / (4.0 / 255))  # 64
    assert zp.dtype == torch.int32 and scale.dim() == 0


def test_qparams_symmetric_signed_closed_form():
    qs = QSchema(qdtype='qint8', is_symmetry=True, is_symmetric_range=True)
    scale, zp = calculate_qparams(
        torch.tensor([-2.0, -0.5]), torch.tensor([1.0, 0.25]), qs)
    torch.testing.assert_close(scale, torch.tensor([2.0 / 127, 0.5 / 127]))
    assert zp.tolist() == [0, 0]


def test_qparams_symmetric_unsigned():
    qs = QSchema(qdtype='quint8', is_symmetry=True)
    # non-negative data (after ReLU): the whole unsigned range
    scale, zp = calculate_qparams(torch.tensor(0.), torch.tensor(2.55), qs)
    assert scale.item() == pytest.approx(0.01) and zp.item() == 0
    # signed data: zero-point in the middle, as torch's quint8 symmetric
    scale, zp = calculate_qparams(torch.tensor(-1.), torch.tensor(2.), qs)
    assert scale.item() == pytest.approx(2.0 / 127.5) and zp.item() == 128


def test_qparams_pot_scale():
    qs = QSchema(qdtype='qint8', is_symmetry=True, is_pot_scale=True)
    scale, _ = calculate_qparams(torch.tensor(-1.), torch.tensor(1.), qs)
    assert scale.item() == 2.0**-6  # 1/127.5 = 2^-6.99 rounded up


def test_qparams_never_seen_data():
    with pytest.raises(ValueError, match='non-finite statistics'):
        calculate_qparams(
            torch.tensor(float('inf')), torch.tensor(float('-inf')),
            QSchema())
