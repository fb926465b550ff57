"""The module-tree switches used by the loops."""
import pytest
import torch
from torch import nn

from mmrazor_quant.models.fake_quants import (
    FakeQuantize,
    check_calibrated,
    disable_fake_quant,
    disable_observer,
    enable_fake_quant,
    enable_observer,
    iter_fake_quants,
    named_fake_quants,
    preserve_quant_state,
    restore_switches,
    save_switches,
)
from .helpers import observer


def _model():
    model = nn.Sequential(nn.Linear(4, 4), nn.ReLU(), nn.Linear(4, 2))
    model.fq_in = FakeQuantize(observer(bit=4))
    model[1].fq = FakeQuantize(observer(bit=4))
    return model


def test_iterates_every_fake_quant_once_with_its_name():
    model = _model()
    assert [n for n, _ in named_fake_quants(model)] == ['1.fq', 'fq_in']
    assert len(list(iter_fake_quants(model))) == 2
    assert list(iter_fake_quants(model.fq_in)) == [model.fq_in]


def test_switches_change_behaviour():
    model = _model()
    x = torch.randn(8, 4)
    assert disable_observer(model) == 2
    assert all(not fq.observer_enabled[0] for fq in iter_fake_quants(model))
    enable_observer(model)
    model.fq_in(x)
    assert model.fq_in.is_initialized
    disable_observer(model)
    model.fq_in(x * 10)
    assert model.fq_in.observer.max_val.item() == x.max().item()
    disable_fake_quant(model)
    assert torch.equal(model.fq_in(x * 10), x * 10)
    assert enable_fake_quant(model) == 2
    # clamped to the calibrated range, up to the half step by which the
    # rounded zero point shifts the grid
    half_step = model.fq_in.scale.item() / 2
    assert model.fq_in(x * 10).max().item() <= x.max().item() + half_step


def test_check_calibrated_lists_the_missing_names():
    model = _model()
    model.fq_in(torch.randn(3, 4))
    with pytest.raises(RuntimeError,
                       match=r"1 fake quant\(s\) were never calibrated: "
                       r"\['1\.fq'\]"):
        check_calibrated(model)
    model[1].fq(torch.randn(3, 4))
    check_calibrated(model)


def _state(model):
    return ([(int(fq.observer_enabled[0]), int(fq.fake_quant_enabled[0]))
             for fq in iter_fake_quants(model)],
            [m.training for m in model.modules()],
            [p.requires_grad for p in model.parameters()])


def test_preserve_quant_state_restores_flags_modes_and_grads():
    model = _model().train()
    model.fq_in.disable_observer()  # mixed flags: (0, 1) and (1, 1)
    model[2].eval()  # mixed modes are restored per module
    model[0].weight.requires_grad_(False)
    before = _state(model)
    assert before[0] == [(1, 1), (0, 1)]
    with pytest.raises(KeyError):
        with preserve_quant_state(model) as same:
            assert same is model
            enable_observer(model)
            disable_fake_quant(model)
            model.eval()
            for param in model.parameters():
                param.requires_grad_(True)
            assert _state(model) != before
            raise KeyError('restored on errors too')
    assert _state(model) == before


def test_save_and_restore_switches():
    model = _model()
    switches = save_switches(model)
    assert [(on, fq) for _, on, fq in switches] == [(True, True)] * 2
    disable_observer(model)
    disable_fake_quant(model)
    restore_switches(switches)
    assert _state(model)[0] == [(1, 1), (1, 1)]
