"""MMRazor's LSQ fake-quant and observer scripts after the rename
(``mmrazor.`` -> ``mmrazor_quant.``; observers from mmrazor_quant instead of
torch.ao), plus the torch-style kwargs mapped onto QSchema."""
from unittest import TestCase

import pytest
import torch

from mmrazor_quant import digit_version
from mmrazor_quant.models import (
    LearnableFakeQuantize,
    LSQObserver,
    LSQPerChannelObserver,
)
from mmrazor_quant.models.fake_quants import (
    FakeQuantize,
    disable_fake_quant,
    disable_observer,
    enable_fake_quant,
    enable_observer,
    enable_param_learning,
    enable_static_estimate,
    enable_val,
)
from mmrazor_quant.models.observers import (
    MinMaxObserver,
    MovingAverageMinMaxObserver,
    MovingAveragePerChannelMinMaxObserver,
    PerChannelMinMaxObserver,
)
from .helpers import captured_log


class TestLearnableFakeQuantize(TestCase):

    def setUp(self):
        self.assertGreaterEqual(digit_version(torch.__version__),
                                digit_version('1.13.0'))
        common = dict(quant_min=0, quant_max=255, dtype=torch.quint8,
                      reduce_range=True)
        self.zero_point_trainable_fakequant = LearnableFakeQuantize.with_args(
            observer=MovingAverageMinMaxObserver,
            qscheme=torch.per_tensor_affine, zero_point_trainable=True,
            **common)
        self.zero_point_untrainable_fakequant = \
            LearnableFakeQuantize.with_args(
                observer=MovingAverageMinMaxObserver,
                qscheme=torch.per_tensor_affine, zero_point_trainable=False,
                **common)
        self.zero_point_untrainable_per_channel_fakequant = \
            LearnableFakeQuantize.with_args(
                observer=MovingAveragePerChannelMinMaxObserver,
                qscheme=torch.per_channel_affine, zero_point_trainable=False,
                **common)

    def test_mapped_scheme(self):
        fq = self.zero_point_untrainable_fakequant()
        # reduce_range halves [0, 255] for observer and fake quant alike
        self.assertEqual(fq.qscheme.quant_range, (0, 127))
        self.assertEqual(fq.activation_post_process.qscheme.quant_range,
                         (0, 127))
        self.assertEqual(fq.dtype, torch.quint8)
        self.assertEqual(fq.torch_qscheme, torch.per_tensor_affine)
        self.assertEqual(fq.bitwidth, 7)
        self.assertFalse(fq.zero_point_trainable)
        self.assertTrue(self.zero_point_trainable_fakequant()
                        .zero_point_trainable)
        per_channel = self.zero_point_untrainable_per_channel_fakequant()
        self.assertTrue(per_channel.is_per_channel)
        self.assertEqual(per_channel.torch_qscheme, torch.per_channel_affine)

    def test_forward(self):
        for factory in (self.zero_point_untrainable_fakequant,
                        self.zero_point_trainable_fakequant):
            fq_module = factory()
            torch.manual_seed(42)
            X = torch.rand(20, 10, dtype=torch.float32)
            Y = fq_module(X)
            self.assertFalse(torch.equal(Y, X))
            # the first batch sets the range: [0, max] on the 7-bit grid
            s = float(X.max()) / 127
            self.assertAlmostEqual(float(fq_module.scale.detach()), s,
                                   places=6)
            fq_module.toggle_fake_quant(False)
            X = torch.rand(20, 10, dtype=torch.float32)
            self.assertTrue(torch.equal(fq_module(X), X))

            scale = fq_module.scale.clone().detach()
            zero_point = fq_module.zero_point.clone().detach()
            fq_module.toggle_observer_update(False)
            fq_module.toggle_fake_quant(True)
            X = 10.0 * torch.rand(20, 10, dtype=torch.float32) - 5.0
            Y = fq_module(X)
            self.assertFalse(torch.equal(Y, X))
            self.assertEqual(fq_module.scale, scale)
            self.assertEqual(fq_module.zero_point, zero_point)

            fq_module.toggle_observer_update(True)
            Y = fq_module(X)
            self.assertFalse(torch.equal(Y, X))
            self.assertNotEqual(fq_module.scale, scale)
            self.assertNotEqual(fq_module.zero_point, zero_point)

    def test_state(self):
        fq_module = self.zero_point_untrainable_fakequant()
        fq_module.enable_param_learning()
        self.assertEqual(fq_module.learning_enabled[0], 1)
        self.assertEqual(fq_module.scale.requires_grad, 1)
        self.assertEqual(fq_module.zero_point.requires_grad, 0)
        self.assertEqual(fq_module.fake_quant_enabled[0], 1)
        self.assertEqual(fq_module.static_enabled[0], 0)

        fq_module.enable_static_estimate()
        self.assertEqual(fq_module.learning_enabled[0], 0)
        self.assertEqual(fq_module.scale.requires_grad, 0)
        self.assertEqual(fq_module.fake_quant_enabled[0], 1)
        self.assertEqual(fq_module.static_enabled[0], 1)

        fq_module.enable_val()
        self.assertEqual(fq_module.learning_enabled[0], 0)
        self.assertEqual(fq_module.fake_quant_enabled[0], 1)
        self.assertEqual(fq_module.static_enabled[0], 0)

        fq_module.enable_static_observation()
        self.assertEqual(fq_module.learning_enabled[0], 0)
        self.assertEqual(fq_module.fake_quant_enabled[0], 0)
        self.assertEqual(fq_module.static_enabled[0], 1)

        fq_module = self.zero_point_trainable_fakequant()
        fq_module.enable_param_learning()
        self.assertEqual(fq_module.learning_enabled[0], 1)
        self.assertEqual(fq_module.zero_point.requires_grad, 1)
        self.assertEqual(fq_module.static_enabled[0], 0)

    def test_model_apply_switches(self):
        model = torch.nn.Sequential(self.zero_point_untrainable_fakequant(),
                                    torch.nn.ReLU())
        model.apply(enable_param_learning)
        self.assertEqual(model[0].learning_enabled[0], 1)
        self.assertEqual(model[0].static_enabled[0], 0)
        model.apply(enable_static_estimate)
        self.assertEqual(model[0].static_enabled[0], 1)
        model.apply(enable_val)
        self.assertEqual(model[0].static_enabled[0], 0)
        self.assertEqual(model[0].learning_enabled[0], 0)

    def test_switch_functions_with_model_apply(self):
        model = torch.nn.Sequential(
            torch.nn.Sequential(self.zero_point_untrainable_fakequant()),
            self.zero_point_trainable_fakequant())
        fqs = [model[0][0], model[1]]
        model.apply(disable_observer)
        model.apply(disable_fake_quant)
        self.assertEqual([int(f.observer_enabled[0]) for f in fqs], [0, 0])
        self.assertEqual([int(f.fake_quant_enabled[0]) for f in fqs], [0, 0])
        enable_observer(model)
        enable_fake_quant(model)
        self.assertEqual([int(f.observer_enabled[0]) for f in fqs], [1, 1])
        self.assertEqual([int(f.fake_quant_enabled[0]) for f in fqs], [1, 1])

    def test_load_state_dict(self):
        fq_module = self.zero_point_untrainable_per_channel_fakequant()
        state_dict = fq_module.state_dict()
        X = torch.rand(32, 16, 3, 3, dtype=torch.float32)
        _ = fq_module(X)
        self.assertEqual(fq_module.scale.shape, (32, ))
        fq_module.load_state_dict(state_dict)
        self.assertEqual(fq_module.scale.shape, (0, ))


class TestLSQObserver(TestCase):

    def setUp(self):
        self.lsq = LSQObserver.with_args(
            dtype=torch.quint8,
            qscheme=torch.per_tensor_symmetric,
            reduce_range=False,
            quant_min=0,
            quant_max=255)

    def test_forward(self):
        lsq_observer = self.lsq()
        torch.manual_seed(42)
        X = torch.rand(20, 10, dtype=torch.float32)
        self.assertTrue(torch.equal(lsq_observer(X), X))
        # MMRazor skipped empty tensors; here observing one is an error
        with pytest.raises(ValueError, match='cannot observe an empty'):
            lsq_observer(torch.rand(0))

    def test_calculate_qparams(self):
        lsq_observer = self.lsq()
        lsq_observer(torch.ones(10, dtype=torch.float32))
        scale, zero_point = lsq_observer.calculate_qparams()
        # tensor_norm = 1, quant_max = 255
        self.assertAlmostEqual(float(scale), 2 / 255**0.5, places=7)
        # non-negative data on an unsigned grid: zero point at quant_min
        # (MMRazor's symmetric quint8 put it at 127, losing half the grid)
        self.assertEqual(int(zero_point), 0)

    def test_direct_torch_style_kwargs(self):
        obs = LSQObserver(dtype=torch.qint8,
                          qscheme=torch.per_tensor_symmetric, quant_min=-7,
                          quant_max=7)
        self.assertEqual((obs.qscheme.bit, obs.qscheme.is_symmetric_range),
                         (4, True))
        obs(torch.full((4, ), -2.))
        scale, zero_point = obs.calculate_qparams()
        self.assertAlmostEqual(float(scale), 2 * 2 / 7**0.5, places=6)
        self.assertEqual(int(zero_point), 0)


class TestLSQPerChannelObserver(TestCase):

    def setUp(self):
        self.lsq = LSQPerChannelObserver.with_args(
            dtype=torch.qint8,
            qscheme=torch.per_channel_symmetric,
            reduce_range=False,
            quant_min=-127,
            quant_max=127)

    def test_calculate_qparams(self):
        lsq_observer = self.lsq()
        X = torch.ones(2, 10, dtype=torch.float32)
        X[0] -= 1
        lsq_observer(X)
        scale, zero_point = lsq_observer.calculate_qparams()
        # an all-zero channel gets float32 eps, not MMRazor's 0
        self.assertEqual(float(scale[0]), torch.finfo(torch.float32).eps)
        self.assertAlmostEqual(float(scale[1]), 2 / 127**0.5, places=7)
        self.assertTrue(torch.equal(zero_point, torch.zeros(2).int()))


@pytest.mark.parametrize('cls, kwargs, quant_range, sym, per_channel', [
    (MinMaxObserver, dict(dtype=torch.qint8), (-128, 127), False, False),
    (MinMaxObserver, dict(dtype=torch.quint8, reduce_range=True), (0, 127),
     False, False),
    (MinMaxObserver, dict(dtype=torch.qint8, reduce_range=True), (-64, 63),
     False, False),
    (MinMaxObserver, dict(dtype=torch.qint8, quant_min=-8, quant_max=7,
                          qscheme=torch.per_tensor_symmetric), (-8, 7), True,
     False),
    (MinMaxObserver, dict(dtype=torch.quint8, quant_min=0, quant_max=14),
     (0, 14), False, False),
    (PerChannelMinMaxObserver, dict(dtype=torch.qint8, ch_axis=1,
                                    qscheme=torch.per_channel_symmetric),
     (-128, 127), True, True),
    (MovingAverageMinMaxObserver, dict(dtype=torch.quint8,
                                       averaging_constant=0.5), (0, 255),
     False, False),
])
def test_with_args_maps_torch_keys(cls, kwargs, quant_range, sym,
                                   per_channel):
    obs = cls.with_args(**kwargs)()
    assert obs.qscheme.quant_range == quant_range
    assert obs.qscheme.is_symmetry is sym
    assert obs.qscheme.is_per_channel is per_channel
    if 'ch_axis' in kwargs:
        assert obs.qscheme.ch_axis == kwargs['ch_axis']
    if 'averaging_constant' in kwargs:
        assert obs.averaging_constant == kwargs['averaging_constant']


def test_with_args_chains_and_builds_fresh_modules():
    factory = FakeQuantize.with_args(observer=MinMaxObserver.with_args(
        dtype=torch.qint8)).with_args(quant_min=-127, quant_max=127)
    a, b = factory(), factory()
    assert a is not b and a.observer is not b.observer
    assert a.qscheme.quant_range == (-127, 127)
    assert a.qscheme.is_symmetric_range
    assert 'FakeQuantize.with_args(' in repr(factory)


def test_reduce_range_is_logged():
    with captured_log() as log:
        MinMaxObserver.with_args(dtype=torch.quint8, reduce_range=True)()
    assert ('MinMaxObserver: reduce_range=True quantizes to [0, 127] in the '
            'observer and the fake quant alike') in log.getvalue()


@pytest.mark.parametrize('cls, kwargs, error, match', [
    (MinMaxObserver, dict(dtype=torch.float32), ValueError,
     'dtype must be torch.quint8 or torch.qint8'),
    (MinMaxObserver, dict(dtype=torch.quint8, quant_min=0, quant_max=200),
     ValueError, r'quant_min=0, quant_max=200 is not a quint8 range'),
    (MinMaxObserver, dict(quant_min=0), ValueError,
     'give both quant_min and quant_max'),
    (MinMaxObserver, dict(qscheme=torch.per_channel_affine), ValueError,
     'MinMaxObserver is a per-tensor observer but qscheme='),
    (LSQPerChannelObserver, dict(qscheme=torch.per_tensor_affine),
     ValueError, 'LSQPerChannelObserver is a per-channel observer'),
    (MinMaxObserver, dict(dtype=torch.qint8, is_dynamic=True), ValueError,
     'is_dynamic=True'),
    (MinMaxObserver, dict(dtype=torch.qint8, eps=1e-5), ValueError,
     r'eps=1e-05 is not supported'),
    (MinMaxObserver, dict(dtype=torch.qint8, bogus=1), TypeError,
     "unexpected keyword argument 'bogus'"),
])
def test_torch_style_kwargs_are_validated(cls, kwargs, error, match):
    with pytest.raises(error, match=match):
        cls.with_args(**kwargs)()


def test_lsq_observer_rejects_unknown_and_mixed_kwargs():
    with pytest.raises(TypeError, match=r"LSQObserver\(\) got unexpected "
                       r"keyword arguments \['bogus'\]"):
        LSQObserver(dtype=torch.quint8, bogus=1)
    from mmrazor_quant.structures import QSchema
    with pytest.raises(TypeError, match='either a QSchema or torch-style'):
        LSQObserver(QSchema(), dtype=torch.quint8)


def test_initial_scale_is_not_supported():
    with pytest.raises(ValueError, match='an initial scale is not supported'):
        LearnableFakeQuantize.with_args(observer=LSQObserver, scale=0.5)()
    fq = LearnableFakeQuantize.with_args(observer=LSQObserver, scale=1.,
                                         zero_point=0.)()
    assert not fq.is_initialized
