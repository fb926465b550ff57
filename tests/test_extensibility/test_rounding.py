"""A backend that rounds half away from zero differs from half-even exactly
on the .5 cases."""
import torch

from mmrazor_quant.models.quantizers import (
    BackendSpec,
    BaseQuantizer,
    InputSelector,
    OpKind,
    QuantRules,
    TensorSpec,
)


def _spec(rounding):
    return BackendSpec(
        supported_bits=(8, ),
        weight=TensorSpec(qdtypes=('qint8', ), symmetric=True),
        activation=TensorSpec(qdtypes=('qint8', ), symmetric=True),
        rounding=rounding)


class EvenNPU(BaseQuantizer):
    backend = 'even_npu'
    rules = QuantRules(quantized_inputs={OpKind.LINEAR: InputSelector.FIRST})
    scheme = _spec('half_even')


class AwayNPU(EvenNPU):
    scheme = _spec('half_away_from_zero')


QCONFIG = dict(
    w_observer=dict(type='mmrazor_quant.MinMaxObserver'),
    a_observer=dict(type='mmrazor_quant.MinMaxObserver'),
    w_fake_quant=dict(type='mmrazor_quant.FakeQuantize'),
    a_fake_quant=dict(type='mmrazor_quant.FakeQuantize'),
    w_qscheme=dict(qdtype='qint8', bit=8, is_symmetry=True),
    a_qscheme=dict(qdtype='qint8', bit=8, is_symmetry=True))


def _activation_fake_quant(quantizer_cls):
    quantizer = quantizer_cls(global_qconfig=QCONFIG)
    # Rounding is not in the config: each backend supplies its own.
    fq = quantizer.qconfig.build_activation_fake_quant()
    fq(torch.tensor([-1.27, 1.27]))  # calibrate, then fix the scale
    fq.disable_observer()
    with torch.no_grad():
        fq.scale.fill_(0.5)  # a scale exactly representable: ties are ties
    return quantizer, fq


def test_rounding_differs_exactly_on_ties():
    even_q, even = _activation_fake_quant(EvenNPU)
    away_q, away = _activation_fake_quant(AwayNPU)
    assert even_q.qconfig.a_qscheme.rounding.value == 'half_even'
    assert away_q.qconfig.a_qscheme.rounding.value == 'half_away_from_zero'
    # x / 0.5 = -3.5 .. 3.5 (ties), and non-ties around them.
    ties = (torch.arange(-4, 4, dtype=torch.float32) + 0.5) * 0.5
    others = torch.tensor([-1.3, -0.2, 0.0, 0.3, 0.6, 1.1, 1.76, 2.0])
    x = torch.cat([ties, others])
    y_even, y_away = even(x), away(x)
    differs = y_even != y_away
    assert differs[:8].tolist() == [False, True, False, True, True, False,
                                    True, False]
    assert not differs[8:].any()
    # Ties: half-even goes to the even integer, half-away from zero.
    assert (y_even[:8] / 0.5).tolist() == [-4, -2, -2, 0, 0, 2, 2, 4]
    assert (y_away[:8] / 0.5).tolist() == [-4, -3, -2, -1, 1, 2, 3, 4]


def test_backend_rounding_reaches_weight_fake_quants():
    for cls, rounding in ((EvenNPU, 'half_even'),
                          (AwayNPU, 'half_away_from_zero')):
        fq = cls(global_qconfig=QCONFIG).qconfig.build_weight_fake_quant()
        assert fq.qscheme.rounding.value == rounding
        assert fq.observer.qscheme.rounding.value == rounding
