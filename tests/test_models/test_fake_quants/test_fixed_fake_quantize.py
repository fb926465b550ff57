"""FixedFakeQuantize: the deploy-time copy of a calibrated fake quant."""
import pytest
import torch

from mmrazor_quant.models.fake_quants import (
    FakeQuantize,
    FixedFakeQuantize,
    LearnableFakeQuantize,
    LSQPlusFakeQuantize,
    PACTFakeQuantize,
)
from mmrazor_quant.structures.quantization import QSchema
from .helpers import observer

SCHEMES = [
    (False, dict(qdtype='quint8', bit=8)),
    (False, dict(qdtype='qint8', bit=4, rounding='half_away_from_zero')),
    (True, dict(qdtype='qint8', bit=8, is_symmetry=True, ch_axis=1)),
    (True, dict(qdtype='quint8', bit=16, rounding='half_away_from_zero')),
]


@pytest.mark.parametrize('cls', [FakeQuantize, LearnableFakeQuantize,
                                 LSQPlusFakeQuantize])
@pytest.mark.parametrize('per_channel,qscheme', SCHEMES)
def test_fixed_equals_the_calibrated_fake_quant_exactly(
        cls, per_channel, qscheme):
    torch.manual_seed(0)
    fq = cls(observer(per_channel=per_channel, **qscheme))
    fq.name = 'head.fc (input)'
    fq(torch.randn(6, 4, 3))
    fq.disable_observer()
    if isinstance(fq, LSQPlusFakeQuantize):
        with torch.no_grad():  # a learned, non-integer zero-point
            fq.zero_point.add_(0.3)
    fixed = FixedFakeQuantize.from_fake_quant(fq)
    assert fixed.name == 'head.fc (input)'
    assert fixed.qscheme == fq.qscheme
    x = torch.randn(6, 4, 3) * 2
    torch.testing.assert_close(fixed(x), fq(x), atol=0, rtol=0)


def test_fixed_equals_pact():
    fq = PACTFakeQuantize(observer(qdtype='quint8', bit=4), init_alpha=2.5)
    fixed = FixedFakeQuantize.from_fake_quant(fq)
    x = torch.randn(100) * 3
    torch.testing.assert_close(fixed(x), fq(x), atol=0, rtol=0)


def test_fixed_ignores_switches_and_has_no_observer():
    fixed = FixedFakeQuantize(QSchema(bit=4), scale=torch.tensor(0.5),
                              zero_point=torch.tensor(2))
    assert fixed.observer is None and fixed.is_initialized
    assert fixed.scale.shape == () and fixed.zero_point.dtype == torch.int32
    x = torch.tensor([-1.2, 0.1, 9.])
    expected = torch.tensor([-1.0, 0.0, 6.5])
    fixed.disable_fake_quant()
    fixed.enable_observer()
    assert torch.equal(fixed(x), expected)


@pytest.mark.parametrize('qscheme,scale,zero_point', [
    (QSchema(qdtype='qint8', is_per_channel=True, ch_axis=1),
     torch.tensor([0.1, 0.2]), torch.tensor([0, 1])),
    (QSchema(bit=4, rounding='half_away_from_zero'), torch.tensor(0.1),
     torch.tensor(3)),
])
def test_fixed_exports_without_data_dependent_branches(
        qscheme, scale, zero_point):
    fixed = FixedFakeQuantize(qscheme, scale=scale, zero_point=zero_point)
    x = torch.randn(3, 2)
    exported = torch.export.export(fixed, (x, ))
    torch.testing.assert_close(exported.module()(x), fixed(x), atol=0,
                               rtol=0)
    ops = {n.target for n in exported.graph.nodes if n.op == 'call_function'}
    if qscheme.is_per_channel:
        assert torch.ops.aten.fake_quantize_per_channel_affine.default in ops
    else:
        assert torch.ops.aten.trunc.default in ops  # our own rounding


def test_from_uncalibrated_raises_and_bad_qparams():
    with pytest.raises(RuntimeError, match='FakeQuantize has no qparams'):
        FixedFakeQuantize.from_fake_quant(FakeQuantize(observer()))
    with pytest.raises(ValueError, match='give both scale and zero_point'):
        FixedFakeQuantize(QSchema(), scale=torch.tensor(1.))
    with pytest.raises(ValueError, match='do not fit a PerTensor'):
        FixedFakeQuantize(QSchema(), scale=torch.ones(2),
                          zero_point=torch.zeros(2))


def test_fixed_state_dict_round_trip_per_channel():
    src = FixedFakeQuantize(QSchema(is_per_channel=True),
                            scale=torch.tensor([0.1, 0.2, 0.3]),
                            zero_point=torch.tensor([1, 2, 3]))
    dst = FixedFakeQuantize(QSchema(is_per_channel=True))
    assert not dst.is_initialized and dst.scale.shape == (0, )
    dst.load_state_dict(src.state_dict())
    x = torch.randn(3, 4)
    assert dst.is_initialized
    torch.testing.assert_close(dst(x), src(x), atol=0, rtol=0)
