"""MMRazor's quantizer arguments and properties: no_observer_modules,
extra_redundant_fakequants, prepare_custom_config, support_w_modes /
support_a_modes, export_onnx."""
import copy

import onnx
import pytest
import torch

from mmrazor_quant.compat.torch_ao import TorchAONotSupportedError
from mmrazor_quant.models.quantizers import (
    AcademicQuantizer,
    BackendSpec,
    BaseQuantizer,
    OpenVINOQuantizer,
    TensorRTQuantizer,
    TensorSpec,
    TorchNativeQuantizer,
)
from mmrazor_quant.models.quantizers.op_kinds import OpKind
from mmrazor_quant.models.quantizers.rules import QuantRules
from ..test_models.test_quantizers.test_positions import (
    EXPECTED,
    fake_quant_consumers,
    qconfig,
)
from ..test_models.test_quantizers.toy_models import ResidualCatPoolNet
from .helpers import captured_log

MODES = ('tensor', 'loss', 'predict')


def build(quantizer_cls, **kwargs):
    a_qscheme, expected = EXPECTED[quantizer_cls]
    quantizer = quantizer_cls(global_qconfig=qconfig(a_qscheme), **kwargs)
    model = ResidualCatPoolNet()
    return quantizer, model, quantizer.prepare(model, MODES), expected


def weighted(model):
    return {n for n, m in model.named_modules()
            if hasattr(m, 'weight_fake_quant')}


class ToyPerChannelQuantizer(BaseQuantizer):
    backend = 'toy_compat'
    rules = QuantRules(quantized_inputs={OpKind.CONV: 'first'})
    scheme = BackendSpec(
        weight=TensorSpec(per_channel=True),
        activation=TensorSpec(per_channel=False))


def test_support_modes_follow_the_declared_scheme():
    cfg = qconfig(dict(qdtype='quint8', bit=8))
    toy = ToyPerChannelQuantizer(global_qconfig=cfg)
    assert toy.support_w_modes == ('per_channel', )
    assert toy.support_a_modes == ('per_tensor', )
    # a tuple, never a bare string: 'tensor' is not a mode
    assert 'tensor' not in toy.support_a_modes
    quantizer = OpenVINOQuantizer(global_qconfig=cfg)
    assert quantizer.backend == 'openvino'
    # OpenVINO takes either weight granularity and per-tensor activations,
    # as MMRazor's OpenVINOQuantizer declared.
    assert quantizer.support_w_modes == ('per_tensor', 'per_channel')
    assert quantizer.support_a_modes == ('per_tensor', )


@pytest.mark.parametrize('quantizer_cls',
                         [OpenVINOQuantizer, TorchNativeQuantizer])
def test_no_observer_modules_keep_those_layers_float(quantizer_cls):
    _, model, gms, expected = build(
        quantizer_cls, no_observer_modules=['torch.nn.Linear'])
    assert weighted(model) == {'conv1', 'conv2', 'conv3', 'conv4'}
    # nothing on fc's input (OpenVINO quantizes it before the flatten, on
    # gap's output) or output
    fc_input = ('gap', ['flatten']) if quantizer_cls is OpenVINOQuantizer \
        else (None, ['fc'])
    want = {k: v for k, v in expected.items()
            if k != 'fc' and v != ['fc'] and (k, v) != fc_input}
    assert fake_quant_consumers(gms['tensor'].graph) == want


def test_no_observer_modules_accept_classes_and_check_entries():
    cfg = qconfig(EXPECTED[OpenVINOQuantizer][0])
    quantizer = OpenVINOQuantizer(global_qconfig=cfg,
                                  no_observer_modules=[torch.nn.Conv2d])
    assert quantizer.no_observer_modules == (torch.nn.Conv2d, )
    with pytest.raises(ValueError, match="no_observer_modules: cannot import "
                       "'torch.nn.NoSuchLayer'"):
        OpenVINOQuantizer(global_qconfig=cfg,
                          no_observer_modules=['torch.nn.NoSuchLayer'])
    with pytest.raises(TypeError, match='no_observer_modules must hold '
                       'nn.Module classes'):
        OpenVINOQuantizer(global_qconfig=cfg, no_observer_modules=[len])


def test_extra_redundant_fakequants_remove_from_every_mode():
    spec = dict(
        extra_module_prev_wo_fakequant=('torch.nn.Linear', ),
        extra_method_next_wo_fakequant=(),
        extra_function_next_wo_fakequant=('torch.cat', ))
    with captured_log() as log:
        _, model, gms, expected = build(OpenVINOQuantizer,
                                        extra_redundant_fakequants=spec)
    # fc's input fake quant sits on gap's output, before the flatten
    want = {k: v for k, v in expected.items() if k not in ('gap', 'cat')}
    for mode in MODES:
        table = fake_quant_consumers(gms[mode].graph)
        assert table == want, mode
    assert set(model.act_fake_quants.keys()) == set(want)
    assert ("extra_redundant_fakequants removed 2 activation fake quant(s): "
            "['cat', 'gap']") in log.getvalue()


def test_extra_redundant_fakequants_before_output_op():
    spec = dict(extra_op_prev_wo_fakequant=('output', ))
    _, _, gms, expected = build(TorchNativeQuantizer,
                                extra_redundant_fakequants=spec)
    table = fake_quant_consumers(gms['tensor'].graph)
    assert 'fc' not in table and table == {
        k: v for k, v in expected.items() if k != 'fc'}
    # in 'loss' mode the same fake quant fed the loss: gone there as well
    assert 'fc' not in fake_quant_consumers(gms['loss'].graph)


def test_output_rule_does_not_reach_through_a_layer():
    # OpenVINO quantizes fc's input, not its output: ('output', ) finds no
    # fake quant before the output through grid-keeping ops, and fc stays
    # quantized (MMRazor's walk through any op would have removed it)
    spec = dict(extra_op_prev_wo_fakequant=('output', ))
    _, _, gms, expected = build(OpenVINOQuantizer,
                                extra_redundant_fakequants=spec)
    assert fake_quant_consumers(gms['tensor'].graph) == expected


def test_extra_redundant_fakequants_after_module():
    spec = dict(extra_module_next_wo_fakequant=(torch.nn.Conv2d, ))
    _, _, gms, expected = build(TorchNativeQuantizer,
                                extra_redundant_fakequants=spec)
    assert fake_quant_consumers(gms['tensor'].graph) == {
        k: v for k, v in expected.items()
        if k not in ('conv1', 'conv2', 'conv3', 'conv4')}


@pytest.mark.parametrize('spec, error, match', [
    (dict(extra_module_prev=()), KeyError,
     r"unknown keys \['extra_module_prev'\]"),
    (dict(extra_module_prev_wo_fakequant=('relu', )), ValueError,
     "'relu' is not a dotted path"),
    (dict(extra_method_prev_wo_fakequant=(torch.flatten, )), TypeError,
     'extra_method_prev_wo_fakequant must hold method names'),
])
def test_extra_redundant_fakequants_are_validated(spec, error, match):
    with pytest.raises(error, match=match):
        TensorRTQuantizer(global_qconfig=qconfig(EXPECTED[TensorRTQuantizer]
                                                 [0]),
                          extra_redundant_fakequants=spec)


def test_academic_prepare_custom_config_preserved_attributes():
    quantizer = AcademicQuantizer(
        global_qconfig=qconfig(dict(qdtype='quint8', bit=8)),
        prepare_custom_config=dict(
            preserved_attributes=['toy_attr1', 'toy_attr2']))
    model = ResidualCatPoolNet()
    model.toy_attr1, model.toy_attr2 = 'a', [1, 2]
    for gm in quantizer.prepare(model, MODES).values():
        assert gm.toy_attr1 == 'a' and gm.toy_attr2 is model.toy_attr2
    with pytest.raises(AttributeError, match=r"preserved_attributes "
                       r"\['toy_attr1', 'toy_attr2'\] are not attributes "
                       'of ResidualCatPoolNet'):
        quantizer.prepare(ResidualCatPoolNet(), MODES)


def test_academic_prepare_custom_config_errors():
    cfg = qconfig(dict(qdtype='quint8', bit=8))
    with pytest.raises(TorchAONotSupportedError,
                       match='float_to_observed_custom_module_class is not '
                       'supported.*Use CustomTracer'):
        AcademicQuantizer(global_qconfig=cfg, prepare_custom_config=dict(
            float_to_observed_custom_module_class=[('A', 'B')]))
    with pytest.raises(KeyError, match=r"unknown keys \['typo'\]"):
        AcademicQuantizer(global_qconfig=cfg,
                          prepare_custom_config=dict(typo=1))


def test_export_onnx_writes_qdq_that_onnxruntime_runs(tmp_path):
    import onnxruntime as ort

    # Seeded: QuantizeLinear divides by the scale, the training graph's
    # fake quants multiply by its inverse, and the two round an exact tie
    # apart (one step; an unseeded input met one in about 1 run of 3).
    torch.manual_seed(0)
    quantizer, model, gms, _ = build(OpenVINOQuantizer)
    model.eval()
    x = torch.randn(4, 3, 8, 8)
    gms['tensor'](x, None)  # calibrate
    from mmrazor_quant.models.fake_quants.utils import disable_observer
    disable_observer(model)
    path = str(tmp_path / 'toy.onnx')
    deploy = copy.deepcopy(gms['tensor'])
    quantizer.export_onnx(deploy, (x, ), path, input_names=['input'])
    ops = {n.op_type for n in onnx.load(path).graph.node}
    assert {'QuantizeLinear', 'DequantizeLinear'} <= ops
    # Q/DQ run as written (no int8 kernel fusion): the simulation exactly
    options = ort.SessionOptions()
    options.graph_optimization_level = \
        ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    sess = ort.InferenceSession(path, options,
                                providers=['CPUExecutionProvider'])
    got = sess.run(None, {'input': x.numpy()})[0]
    with torch.no_grad():
        want = gms['tensor'](x, None)
    assert torch.allclose(torch.from_numpy(got), want, atol=1e-5)
    with pytest.raises(TypeError, match=r"unsupported arguments "
                       r"\['do_constant_folding'\]"):
        quantizer.export_onnx(deploy, x, path, do_constant_folding=True)
