"""A plain torch.nn.Module through the front door: module names for
overrides and analysis rows, PTQ passes, export parity."""
import pytest
import torch
from torch import nn

from mmrazor_quant.apis.front_door import (
    analyse_model,
    export_model,
    load_model,
    quantize_model,
)
from mmrazor_quant.frontends.dispatch import BY_CONFIG, float_ops
from .onnx_toys import TOY_SHAPE, ToyNet


def _toy() -> nn.Module:
    torch.manual_seed(0)
    return ToyNet().eval()


def _data(n: int = 32) -> torch.Tensor:
    return torch.randn(n, *TOY_SHAPE,
                       generator=torch.Generator().manual_seed(0))


def test_module_by_dotted_path_is_built():
    model = load_model(dict(type='mmrazor_quant.TorchModel',
                            module='tests.test_frontends.onnx_toys.ToyNet'))
    assert isinstance(model.net, ToyNet)
    with pytest.raises(ValueError, match='cannot be imported'):
        load_model(dict(type='mmrazor_quant.TorchModel',
                        module='tests.no_such_module.Net'))


def test_float_override_by_module_name_and_analysis_rows(tmp_path):
    model = load_model(_toy())
    qmodel = quantize_model(model, _data(16), 'openvino',
                            float_nodes=['conv2'])
    rows = float_ops(qmodel)
    assert ('conv2', BY_CONFIG) in {(r.name, r.reason) for r in rows}
    weights = [k for k, m in qmodel.named_modules()
               if k.endswith('weight_fake_quant')]
    assert not any('conv2' in k for k in weights)
    analysis = analyse_model(qmodel, _data(8))
    nodes = {r.extra['node'] for r in analysis}
    # layers by module name, activation fake quants by the module before
    assert {'conv', 'ln', 'hs', 'inputs'} <= nodes
    _, parity = export_model(qmodel, str(tmp_path / 'toy.onnx'),
                             parity_data=_data(8))
    assert parity['openvino'].sqnr_db >= 35
    assert parity['onnxruntime'].sqnr_db >= 35


def test_unknown_float_node_is_an_error():
    with pytest.raises(ValueError, match=r"\['conv9'\]: no layer"):
        quantize_model(load_model(_toy()), _data(8), 'openvino',
                       float_nodes=['conv9'])


def test_ptq_passes_run_through_the_front_door():
    """CLE before calibration (one pair: conv -> ReLU -> conv2) scales
    the wrapped module's own weights; bias correction after it shifts the
    biases of the quantized layers."""
    model = load_model(_toy())
    before = model.net.conv2.weight.detach().clone()
    bias = model.net.conv2.bias.detach().clone()
    qmodel = quantize_model(
        model, _data(), 'openvino',
        ptq_passes=[dict(type='equalize_cross_layer'),
                    dict(type='correct_bias', num_samples=32)])
    assert qmodel.architecture is model
    after = model.net.conv2.weight.detach()
    # per input channel of conv2: one CLE scale each, not all equal to 1
    ratio = (after / before).flatten(2).mean(-1).mean(0)
    assert ratio.shape == (8, ) and (ratio - 1).abs().max() > 1e-3
    assert not torch.equal(model.net.conv2.bias.detach(), bias)


def test_a_plain_module_is_wrapped_as_load_model_wraps_it():
    """``quantize_model(module, ...)`` as ``nncf.quantize`` takes one: the
    same fake quants and qparams as through ``load_model``."""
    ptq = dict(ptq_passes=[])
    wrapped = quantize_model(load_model(_toy()), _data(16), 'openvino',
                             **ptq)
    plain = quantize_model(_toy(), _data(16), 'openvino', **ptq)
    assert type(plain.architecture).__name__ == 'TorchModel'
    expected = {k: v for k, v in wrapped.state_dict().items()
                if 'scale' in k or 'zero_point' in k}
    got = plain.state_dict()
    assert len(expected) > 4
    for key, value in expected.items():
        torch.testing.assert_close(got[key], value, rtol=0, atol=0)
