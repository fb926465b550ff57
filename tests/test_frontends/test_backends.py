"""Every registered backend's quantizer takes an imported ONNX model with
the front door's defaults: the simulation stays close to the float file.
(Exports of the backends with runtimes here: test_export_parity.py.)"""
import pytest
import torch

from mmrazor_quant.apis.front_door import load_model, quantize_model
from mmrazor_quant.backends import backend_names
from mmrazor_quant.utils.sqnr import sqnr_db
from .onnx_toys import TOY_SHAPE


@pytest.mark.parametrize('backend', [
    pytest.param(b, marks=pytest.mark.slow if b == 'academic' else ())
    for b in sorted(set(backend_names()) - {'onnxruntime'})])
def test_every_backend_quantizes_an_imported_model(toy_onnx, backend):
    model = load_model(toy_onnx)
    x = torch.randn(32, *TOY_SHAPE, generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        ref = model(x[16:])
    qmodel = quantize_model(model, x[:16], backend)
    fake_quants = [m for m in qmodel.modules()
                   if type(m).__name__.endswith('FakeQuantize')]
    # 3 weights and the activations; ncnn quantizes only conv/linear inputs
    assert len(fake_quants) >= (6 if backend == 'ncnn' else 8)
    with torch.no_grad():
        out = qmodel(x[16:], mode='tensor')
    assert sqnr_db(ref, out) > 25, backend


def test_defaults_follow_the_backends_declarations():
    """onnxruntime (no quantizer) takes the placement it names; OpenVINO,
    which declares asymmetric activations, gets them; the others keep
    their own W8A8 activation grid."""
    from mmrazor_quant.backends import get_backend
    from mmrazor_quant.frontends.defaults import (
        default_qconfig,
        default_quantizer,
    )
    native = get_backend('native')
    assert get_backend('onnxruntime').placement_of == 'native'
    assert default_quantizer('onnxruntime')['type'] == \
        f'mmrazor_quant.{native.quantizer}'
    assert default_qconfig('onnxruntime')['a_qscheme'] == \
        native.w8a8['a_qscheme']
    openvino = default_qconfig('openvino')['a_qscheme']
    assert openvino == dict(get_backend('openvino').w8a8['a_qscheme'],
                            is_symmetry=False)
    for name in ('tensorrt', 'ncnn'):
        assert not get_backend(name).asymmetric_activations
        assert default_qconfig(name)['a_qscheme'] == \
            get_backend(name).w8a8['a_qscheme']
    # with asymmetric activations, OpenVINO's depthwise convs read
    # symmetric ones (OpenVINOQuantizer.depthwise_symmetric_tolerance)
    assert default_quantizer('openvino')['depthwise_symmetric_tolerance'] \
        == 0.25
    for name in ('onnxruntime', 'tensorrt', 'ncnn'):
        assert 'depthwise_symmetric_tolerance' not in \
            default_quantizer(name)
