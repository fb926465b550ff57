"""Per-layer qconfigs for every backend: float layers, other bit widths."""
import pytest

from mmrazor_quant.models.quantizers import (
    AcademicQuantizer,
    OpenVINOQuantizer,
    TensorRTQuantizer,
)
from .test_positions import UNSIGNED, W8_SIGNED, fake_quant_consumers, qconfig
from .toy_models import ResidualCatPoolNet

W4 = dict(w_qscheme=dict(bit=4), a_qscheme=dict(bit=4))


def test_module_name_float_and_bits_override_global():
    quantizer = OpenVINOQuantizer(
        qconfig_mapping=dict(
            _global_=qconfig(dict(UNSIGNED, is_symmetry=True)),
            module_name=[('conv2', None), ('re:conv[34]', W4)]))
    model = ResidualCatPoolNet()
    gm = quantizer.prepare(model, ('tensor', ))['tensor']
    # conv2 stays float: no weight fake quant, its BN not folded
    assert not hasattr(model.conv2, 'weight_fake_quant')
    assert type(model.bn2).__name__ == 'BatchNorm2d'
    assert model.conv1.weight_fake_quant.qscheme.bit == 8
    assert model.conv3.weight_fake_quant.qscheme.bit == 4
    assert model.conv4.weight_fake_quant.qscheme.bit == 4
    table = fake_quant_consumers(gm.graph)
    # conv3/conv4 read the pooled tensor through a 4-bit fake quant of its
    # own (before the max pooling), the add still through the 8-bit ones
    assert table['relu2_module_name_re_conv_34_'] == ['pool']
    fq = model.act_fake_quants['relu2_module_name_re_conv_34_']
    assert fq.qscheme.bit == 4 and fq.qscheme.is_symmetry
    assert 'conv2' not in table['conv1']  # conv2's input stays float
    assert table['conv1'] == ['add']


def test_object_type_rule():
    quantizer = AcademicQuantizer(
        qconfig_mapping=dict(
            _global_=qconfig(UNSIGNED), object_type=[('Linear', W4)]))
    model = ResidualCatPoolNet()
    quantizer.prepare(model, ('tensor', ))
    assert model.fc.weight_fake_quant.qscheme.bit == 4
    assert model.conv1.weight_fake_quant.qscheme.bit == 8


def test_first_last_bit():
    quantizer = AcademicQuantizer(
        global_qconfig=qconfig(dict(UNSIGNED, bit=4)), first_last_bit=8)
    model = ResidualCatPoolNet()
    quantizer.prepare(model, ('tensor', ))
    assert model.conv1.weight_fake_quant.qscheme.bit == 8
    assert model.fc.weight_fake_quant.qscheme.bit == 8
    assert model.act_fake_quants['inputs_first_last'].qscheme.bit == 8
    assert model.conv3.weight_fake_quant.qscheme.bit == 8  # global w8 here


def test_unknown_module_name_is_an_error():
    quantizer = OpenVINOQuantizer(
        qconfig_mapping=dict(
            _global_=qconfig(dict(UNSIGNED, is_symmetry=True)),
            module_name=[('backbone.conv9', None)]))
    with pytest.raises(ValueError, match='qconfig_mapping.module_name '
                       '"backbone.conv9" matches no module'):
        quantizer.prepare(ResidualCatPoolNet(), ('tensor', ))


def test_per_layer_scheme_checked_against_backend():
    with pytest.raises(ValueError, match=r'TensorRTQuantizer cannot execute '
                       r'this qconfig:\n  global_qconfig.w_qscheme.bit must '
                       r'be one of \(8,\), got 4'):
        TensorRTQuantizer(
            qconfig_mapping=dict(
                _global_=qconfig(W8_SIGNED), module_name=[('fc', W4)]))


def test_global_given_twice_or_never():
    with pytest.raises(ValueError, match='needs exactly one of'):
        OpenVINOQuantizer()
    with pytest.raises(KeyError, match=r"unknown keys \['global'\]"):
        OpenVINOQuantizer(qconfig_mapping={'global': 1})
