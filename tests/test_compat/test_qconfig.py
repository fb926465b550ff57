"""MMRazor's qconfig structures after the rename: QSchemeHandler and the
QConfigHandler API (mmengine Config input, check_qconfig, convert,
w_fake_quant / a_fake_quant)."""
import copy
from unittest import TestCase

import pytest
import torch
from mmengine.config import Config, ConfigDict

from mmrazor_quant.models.fake_quants import FakeQuantize
from mmrazor_quant.models.observers import (
    MovingAveragePerChannelMinMaxObserver,
    PerChannelMinMaxObserver,
)
from mmrazor_quant.structures import (
    QConfigFactories,
    QConfigHandler,
    QSchemeHandler,
)


class TestQSchemeHandler(TestCase):

    def test_init(self):
        qscheme = QSchemeHandler(is_symmetry=True, is_per_channel=True)
        assert qscheme.torch_qscheme is torch.per_channel_symmetric
        qscheme = QSchemeHandler(is_symmetry=True, is_per_channel=False)
        assert qscheme.torch_qscheme is torch.per_tensor_symmetric
        # MMRazor asserted; here the QSchema error names the key
        with pytest.raises(ValueError, match='qscheme.qdtype must be one of'):
            QSchemeHandler('float')
        qscheme = QSchemeHandler(is_symmetric_range=True)
        assert qscheme.is_symmetric_range is True
        assert 'is_symmetry: True' in str(QSchemeHandler())

    def test_to_observer_params(self):
        params = QSchemeHandler(qdtype='quint8').to_observer_params()
        assert params['dtype'] == torch.quint8
        assert (params['quant_min'], params['quant_max']) == (0, 255)
        params = QSchemeHandler(qdtype='qint8').to_observer_params()
        assert params['dtype'] == torch.qint8
        assert (params['quant_min'], params['quant_max']) == (-128, 127)
        params = QSchemeHandler(
            qdtype='qint8', is_symmetric_range=True).to_observer_params()
        assert (params['quant_min'], params['quant_max']) == (-127, 127)
        params = QSchemeHandler(qdtype='qint8', bit=4,
                                averaging_constant=0.1).to_observer_params()
        assert (params['quant_min'], params['quant_max']) == (-8, 7)
        assert params['averaging_constant'] == 0.1
        assert QSchemeHandler(is_per_channel=True).to_observer_params()[
            'ch_axis'] == 0
        assert 'ch_axis' not in QSchemeHandler().to_observer_params()

    def test_params_build_an_observer(self):
        params = QSchemeHandler(qdtype='qint8', is_per_channel=True,
                                is_symmetric_range=True).to_observer_params()
        obs = PerChannelMinMaxObserver.with_args(**params)()
        assert obs.qscheme.quant_range == (-127, 127)
        assert obs.qscheme.is_symmetry and obs.qscheme.is_per_channel


class TestQConfigHandler(TestCase):

    def setUp(self):
        self.qconfig_dict = dict(
            w_observer=dict(
                type='mmrazor_quant.MovingAveragePerChannelMinMaxObserver'),
            a_observer=dict(
                type='mmrazor_quant.MovingAveragePerChannelMinMaxObserver'),
            w_fake_quant=dict(type='mmrazor_quant.FakeQuantize'),
            a_fake_quant=dict(type='mmrazor_quant.FakeQuantize'),
            w_qscheme=dict(qdtype='qint8', bit=8, is_symmetry=True,
                           is_symmetric_range=True),
            a_qscheme=dict(qdtype='quint8', bit=8, is_symmetry=True),
        )
        self.qconfig = Config(self.qconfig_dict)

    def test_check_qconfig(self):
        assert QConfigHandler.check_qconfig(self.qconfig_dict) is True
        assert QConfigHandler.check_qconfig(self.qconfig) is True
        assert QConfigHandler.check_qconfig(ConfigDict(
            self.qconfig_dict)) is True
        qconfig_dict = copy.copy(self.qconfig_dict)
        qconfig_dict.pop('w_observer')
        assert QConfigHandler.check_qconfig(qconfig_dict) is False
        assert QConfigHandler.check_qconfig('w_observer') is False

    def test_init(self):
        for cfg in (self.qconfig_dict, self.qconfig,
                    ConfigDict(self.qconfig_dict)):
            qconfig = QConfigHandler(cfg)
            for attr in ('w_qscheme', 'a_qscheme', 'w_fake_quant',
                         'a_fake_quant'):
                assert hasattr(qconfig, attr)
            assert qconfig.w_qscheme.is_per_channel is True
            assert qconfig.a_qscheme.is_per_channel is True
            assert qconfig.w_qscheme.quant_range == (-127, 127)

    def test_fake_quant_factories(self):
        qconfig = QConfigHandler(self.qconfig)
        w_fq, other = qconfig.w_fake_quant(), qconfig.w_fake_quant()
        assert isinstance(w_fq, FakeQuantize) and w_fq is not other
        assert isinstance(w_fq.activation_post_process,
                          MovingAveragePerChannelMinMaxObserver)
        assert w_fq.qscheme.quant_range == (-127, 127)
        assert qconfig.a_fake_quant().qscheme.quant_range == (0, 255)

    def test_convert(self):
        qconfig = QConfigHandler(self.qconfig)
        pair = qconfig.convert()
        assert isinstance(pair, QConfigFactories)
        weight, activation = pair
        assert weight().qscheme == qconfig.w_qscheme
        assert activation().qscheme == qconfig.a_qscheme

    def test_bad_format_names_the_keys(self):
        qconfig_dict = copy.copy(self.qconfig_dict)
        qconfig_dict.pop('w_observer')
        with pytest.raises(KeyError, match=r"missing \['w_observer'\]"):
            QConfigHandler(Config(qconfig_dict))
