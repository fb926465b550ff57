"""examples/custom_backend end to end, and the backend declaration rules."""
import json
import os.path as osp

import numpy as np
import pytest

from mmrazor_quant.backends import get_backend
from mmrazor_quant.deploy import QDQFakeQuantize, export_model, run_parity
from mmrazor_quant.deploy.runtimes import (
    BaseRuntime,
    get_runtime,
    runtime_names,
)
from mmrazor_quant.models.fake_quants import named_fake_quants
from mmrazor_quant.models.quantizers import (
    BackendSpec,
    BaseQuantizer,
    OpKind,
    QuantRules,
    TensorSpec,
)
from mmrazor_quant.registry import EXPORTERS, MODELS
from .conftest import BACKEND_CONFIG, example_batch, run_ptq


def test_toy_npu_ptq_export_scale_table(tmp_path, float_checkpoint):
    import toy_npu
    runner = run_ptq(BACKEND_CONFIG, str(tmp_path), float_checkpoint)
    qmodel = runner.model
    assert isinstance(qmodel.quantizer, toy_npu.ToyNPUQuantizer)
    x = example_batch(runner)
    onnx_path = str(tmp_path / 'toy_npu.onnx')
    result = export_model(qmodel, x, onnx_path, backend='toy_npu')
    table_path = osp.join(str(tmp_path), 'toy_npu.npu_scales.json')
    assert result.files['npu_scales'] == table_path
    with open(table_path) as f:
        table = json.load(f)

    fake_quants = dict(named_fake_quants(qmodel.qmodels['tensor']))
    # Conv/linear weights and the inputs of conv/linear/add: 21 weights in
    # the narrow ResNet-18 (20 convs + fc).
    assert set(table) == set(fake_quants)
    weights = [n for n in table if table[n]['axis'] is not None]
    assert len(weights) == 21
    for name, fq in fake_quants.items():
        row = table[name]
        scale, zero_point = fq.get_qparams()
        np.testing.assert_array_equal(
            np.float32(row['scale']), scale.reshape(-1).numpy())
        assert row['zero_point'] == [0] * scale.numel()
        assert (row['bit'], row['quant_min'], row['quant_max']) == (8, -127,
                                                                    127)
        assert row['rounding'] == 'half_even'

    # The ONNX QDQ model carries the same scales: every scale of the table
    # appears among the QuantizeLinear scales.
    onnx_scales = {
        round(s, 12)
        for q in json.load(open(result.files['qparams']))['onnx_tensors']
        .values() for s in q['scale']
    }
    table_scales = {round(s, 12) for r in table.values() for s in r['scale']}
    assert table_scales <= onnx_scales

    # The user's runtime plugin runs the file, and the simulation computes
    # as it declares: QuantizeLinear's division, float sums and biases (not
    # onnxruntime's int8 kernels, which round biases to int32 and, without
    # VNNI, saturate u8 x s8 pairs).
    plugin = get_runtime('toy_npu_reference')
    assert isinstance(plugin, toy_npu.ToyNPUReference)
    assert get_backend('toy_npu').runtime in runtime_names()
    fake_quants = [m for m in result.deploy_model.modules()
                   if isinstance(m, QDQFakeQuantize)]
    with plugin.simulation(result.deploy_model):
        assert all(fq.divides for fq in fake_quants)
    assert not any(fq.divides for fq in fake_quants)
    report = run_parity(result.deploy_model, onnx_path, x,
                        'toy_npu_reference')
    print(report.format())
    assert report.runtime == 'toy_npu_reference'
    assert not report.int8_saturates
    # exact on an AVX-512 CPU; on an AVX2 one, float sums in another order
    # flip one rounding in one of the 16 images (53.5 dB)
    assert report.agreement == 1 and report.sqnr_db >= 40


def test_a_runtime_must_declare_its_name_and_arithmetic():
    with pytest.raises(TypeError, match=r"NoName must declare name"):

        class NoName(BaseRuntime):
            pass

    with pytest.raises(TypeError, match=r"quantizes_by must be one of"):

        class Rounding(BaseRuntime):
            name = 'rounding'
            quantizes_by = 'truncation'


def _qconfig(bit, **a_overrides):
    scheme = dict(qdtype='qint8', bit=bit, is_symmetry=True,
                  is_symmetric_range=True)
    return dict(
        w_observer=dict(type='mmrazor_quant.PerChannelMinMaxObserver'),
        a_observer=dict(type='mmrazor_quant.MinMaxObserver'),
        w_fake_quant=dict(type='mmrazor_quant.FakeQuantize'),
        a_fake_quant=dict(type='mmrazor_quant.FakeQuantize'),
        w_qscheme=dict(scheme),
        a_qscheme=dict(scheme, **a_overrides))


def test_one_backend_several_bit_widths():
    import toy_npu
    for bit, (qmin, qmax) in ((4, (-7, 7)), (8, (-127, 127))):
        quantizer = toy_npu.ToyNPUQuantizer(global_qconfig=_qconfig(bit))
        assert quantizer.qconfig.w_qscheme.quant_range == (qmin, qmax)
        assert quantizer.qconfig.a_qscheme.quant_range == (qmin, qmax)
        # The backend's rounding is filled in where the qscheme has none.
        assert quantizer.qconfig.a_qscheme.rounding.value == 'half_even'


@pytest.mark.parametrize('bit, overrides, message', [
    (6, {}, r'w_qscheme\.bit must be one of \(4, 8\), got 6'),
    (8, dict(qdtype='quint8'),
     r"a_qscheme\.qdtype must be one of \('qint8',\), got 'quint8'"),
    (8, dict(is_symmetry=False),
     r'a_qscheme\.is_symmetry must be True, got False'),
    (8, dict(is_symmetric_range=False),
     r'a_qscheme\.is_symmetric_range must be True'),
    (8, dict(rounding='half_away_from_zero'),
     r"a_qscheme\.rounding must be 'half_even', got 'half_away_from_zero'"),
])
def test_scheme_violations_name_the_key(bit, overrides, message):
    import toy_npu
    with pytest.raises(ValueError, match=message):
        toy_npu.ToyNPUQuantizer(global_qconfig=_qconfig(bit, **overrides))


def test_per_layer_qconfig_is_checked_too():
    import toy_npu
    with pytest.raises(ValueError, match=r'ToyNPUQuantizer cannot execute'):
        toy_npu.ToyNPUQuantizer(
            qconfig_mapping=dict(
                _global_=_qconfig(8),
                module_name=[('head.fc', dict(w_qscheme=dict(bit=2)))]))


RULES = QuantRules(quantized_inputs={OpKind.CONV: 'first'})


def test_missing_backend_name_is_an_error_at_class_definition():
    with pytest.raises(TypeError, match=r"NoName must declare backend = "
                       r"'<name>' .* got None"):

        class NoName(BaseQuantizer):
            rules = RULES


def test_missing_rules_is_an_error_at_class_definition():
    with pytest.raises(TypeError, match=r'NoRules must declare rules = '
                       r'QuantRules\(\.\.\.\) .* got None'):

        class NoRules(BaseQuantizer):
            backend = 'no_rules'


def test_empty_rules_and_bad_scheme_are_errors():
    with pytest.raises(TypeError, match=r'Empty\.rules quantizes nothing'):

        class Empty(BaseQuantizer):
            backend = 'empty'
            rules = QuantRules()

    with pytest.raises(TypeError, match=r'BadScheme\.scheme must be a '
                       r'BackendSpec or None'):

        class BadScheme(BaseQuantizer):
            backend = 'bad'
            rules = RULES
            scheme = dict(bits=(8, ))


def test_abstract_intermediate_class_and_inheritance():

    class Family(BaseQuantizer, abstract=True):
        """Declares nothing; its subclasses do."""

    class Member(Family):
        backend = 'member'
        rules = RULES

    # A subclass inherits its parent's declarations.
    class Child(Member):
        pass

    assert Child.backend == 'member' and Child.rules is RULES


@pytest.mark.parametrize('kwargs, message', [
    (dict(supported_bits=()), r'supported_bits must be a non-empty tuple'),
    (dict(supported_bits=(1, 8)), r'must hold ints in \[2, 16\]'),
    (dict(supported_bits=(8, ), weight=TensorSpec(bits=(4, ))),
     r'weight\.bits \(4,\) includes \[4\], not in supported_bits \(8,\)'),
    (dict(rounding='stochastic'), r'rounding must be one of'),
])
def test_backend_spec_validates_itself(kwargs, message):
    with pytest.raises(ValueError, match=message):
        BackendSpec(**kwargs)


def test_registering_a_name_twice_is_an_error():
    import toy_npu  # noqa: F401  (registers ToyNPUQuantizer and toy_npu)

    class ToyNPUQuantizer(BaseQuantizer):
        backend = 'toy_npu_clone'
        rules = RULES

    with pytest.raises(KeyError, match=r'ToyNPUQuantizer is already '
                       r'registered in model at toy_npu\.quantizer'):
        MODELS.register_module(module=ToyNPUQuantizer)
    with pytest.raises(KeyError, match=r'ToyNPUExporter is already '
                       r'registered in exporter at toy_npu\.exporter'):
        EXPORTERS.register_module(name='ToyNPUExporter', module=object)
    assert MODELS.get('ToyNPUQuantizer').__module__ == 'toy_npu.quantizer'
