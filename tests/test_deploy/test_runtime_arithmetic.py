"""The simulation a runtime is compared with: OpenVINO's convs sum exactly
(an int32 accumulator), onnxruntime's in float32 and its QuantizeLinear
divides."""
import pytest
import torch
import torch.nn.functional as F

from mmrazor_quant.deploy import build_deploy_model
from mmrazor_quant.deploy.qdq_fake_quantize import QDQFakeQuantize
from mmrazor_quant.deploy.runtime_arithmetic import exact_accumulation
from mmrazor_quant.deploy.runtimes import get_runtime
from mmrazor_quant.deploy.weight_quantized_layer import WeightQuantizedLayer
from mmrazor_quant.models.fake_quants.utils import disable_observer
from mmrazor_quant.registry import MODELS
from ..toys import openvino_w8a8, tiny_resnet


@pytest.fixture(scope='module')
def deployed():
    """A calibrated tiny ResNet's deploy model (convs and a linear)."""
    torch.manual_seed(0)
    model = MODELS.build(openvino_w8a8(tiny_resnet(width=16))).eval()
    with torch.no_grad():
        model(torch.randn(8, 3, 32, 32), mode='tensor')
    disable_observer(model)
    return build_deploy_model(model).eval()


def _layers(model):
    return [m for m in model.modules() if isinstance(m, WeightQuantizedLayer)]


def _exact(layer, x):
    """Closed form: the float64 sum of the on-grid products, rounded once
    to float32, then the float32 bias."""
    inner = layer.layer
    if isinstance(inner, torch.nn.Linear):
        out = F.linear(x.double(), layer.weight.double()).float()
        return out + inner.bias
    out = F.conv2d(x.double(), layer.weight.double(), None, inner.stride,
                   inner.padding, inner.dilation, inner.groups).float()
    return out + inner.bias.reshape(-1, 1, 1)


def test_exact_accumulation_rounds_the_sum_once(deployed):
    layers = _layers(deployed)
    conv = next(m for m in layers if isinstance(m.layer, torch.nn.Conv2d)
                and m.layer.in_channels >= 64)
    linear = next(m for m in layers if isinstance(m.layer, torch.nn.Linear))
    torch.manual_seed(1)
    for layer, shape in ((conv, (4, conv.layer.in_channels, 8, 8)),
                         (linear, (4, linear.layer.in_features))):
        # an input on an activation grid, as the layer gets it
        x = torch.randint(0, 256, shape).float() * 0.0173
        with torch.no_grad():
            summed = layer(x)
            with exact_accumulation(deployed):
                exact = layer(x)
            again = layer(x)
        assert torch.equal(exact, _exact(layer, x))
        # float32 partial sums round differently somewhere (one ulp), and
        # the block restores them
        assert not torch.equal(summed, exact)
        assert torch.equal(again, summed)
        torch.testing.assert_close(summed, exact, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize('runtime,exact,divides', [
    ('openvino', True, False),
    ('onnxruntime', False, True),
])
def test_runtime_arithmetic_follows_the_runtime(deployed, runtime, exact,
                                                divides):
    plugin = get_runtime(runtime)
    assert plugin.accumulates_exactly is exact
    assert (plugin.quantizes_by == 'division') is divides
    fake_quants = [m for m in deployed.modules()
                   if isinstance(m, QDQFakeQuantize)]
    with plugin.simulation(deployed):
        assert all(m.exact_accumulation is exact
                   for m in _layers(deployed))
        assert all(fq.divides is divides for fq in fake_quants)
    assert not any(m.exact_accumulation for m in _layers(deployed))
    assert not any(fq.divides for fq in fake_quants)
