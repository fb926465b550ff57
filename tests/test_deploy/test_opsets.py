"""Every opset check and choice reads the constants of
``structures/opsets.py``."""
import pytest
import torch
from torch import nn

from mmrazor_quant.deploy import onnx_export
from mmrazor_quant.deploy.exporters.base import BaseExporter
from mmrazor_quant.deploy.onnx_export import prepare_qdq_export
from mmrazor_quant.deploy.qdq_fake_quantize import QDQFakeQuantize, onnx_qtype
from mmrazor_quant.models.fake_quants import FakeQuantize
from mmrazor_quant.structures import deploy_config, opsets
from mmrazor_quant.structures.deploy_config import DeployConfig
from tests.test_models.test_fake_quants.helpers import observer


def test_the_values():
    assert (opsets.QDQ_MIN_OPSET, opsets.MIN_OPSET, opsets.DEFAULT_OPSET,
            opsets.DYNAMO_MIN_OPSET, opsets.LOW_BIT_OPSET,
            opsets.MAX_OPSET) == (10, 13, 17, 18, 21, 21)
    # the names other modules re-export are the same objects
    assert deploy_config.MIN_OPSET is opsets.MIN_OPSET
    assert deploy_config.MAX_OPSET is opsets.MAX_OPSET
    assert onnx_export.MIN_OPSET is opsets.MIN_OPSET
    assert onnx_export.DEFAULT_OPSET is opsets.DEFAULT_OPSET


def _deploy_cfg(opset):
    return dict(
        backend_config=dict(type='onnxruntime'),
        onnx_config=dict(opset_version=opset))


def test_deploy_cfg_accepts_exactly_the_range():
    for opset in (opsets.QDQ_MIN_OPSET, opsets.MAX_OPSET):
        assert DeployConfig.from_dict(_deploy_cfg(opset)).opset == opset
    for opset in (opsets.QDQ_MIN_OPSET - 1, opsets.MAX_OPSET + 1):
        with pytest.raises(ValueError, match=f'opset_version={opset} is '
                           'not supported'):
            DeployConfig.from_dict(_deploy_cfg(opset))


def test_export_refuses_below_per_channel():
    with pytest.raises(ValueError, match=r'opset must be >= 13 '
                       r'\(per-channel QuantizeLinear\), got 12'):
        prepare_qdq_export(nn.Identity(), opsets.MIN_OPSET - 1)
    assert prepare_qdq_export(nn.Identity(), opsets.MIN_OPSET) == 0


def test_low_bit_types_start_at_the_low_bit_opset():
    assert onnx_qtype(-8, 7, opsets.LOW_BIT_OPSET).name == 'INT4'
    assert onnx_qtype(-128, 127, opsets.QDQ_MIN_OPSET).name == 'INT8'
    with pytest.raises(ValueError):
        onnx_qtype(-8, 7, opsets.LOW_BIT_OPSET - 1)


def _deploy_fake_quant(bit):
    fake_quant = FakeQuantize(observer(bit=bit))
    fake_quant(torch.linspace(-1, 1, 9))
    return QDQFakeQuantize.from_fake_quant(fake_quant)


def test_exporter_default_opset():
    eight_bit = nn.Sequential(_deploy_fake_quant(8))
    four_bit = nn.Sequential(_deploy_fake_quant(8), _deploy_fake_quant(4))
    assert BaseExporter()._opset(eight_bit) == opsets.DEFAULT_OPSET
    assert BaseExporter()._opset(four_bit) == opsets.LOW_BIT_OPSET
    # a pinned opset is kept as given
    assert BaseExporter(opset=19)._opset(four_bit) == 19
