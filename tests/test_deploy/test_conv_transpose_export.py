"""A transposed conv exported with its weights quantized per output channel
(``DequantizeLinear`` axis 1): parity with the simulation in onnxruntime
and OpenVINO, and OpenVINO's CPU plugin runs it as an int8
``Deconvolution``."""
import onnx
import pytest
import torch
from torch import nn

from mmrazor_quant.apis.front_door import (
    export_model,
    load_model,
    quantize_model,
)
from mmrazor_quant.deploy.openvino.runtime_graph import (
    precisions_of,
    runtime_layers,
)


class Upsampler(nn.Module):
    """A DB-head-like decoder: conv, then two stride-2 transposed convs,
    the last one to a single channel."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.up1 = nn.ConvTranspose2d(8, 8, 2, stride=2)
        self.up2 = nn.ConvTranspose2d(8, 1, 2, stride=2)

    def forward(self, x):
        x = torch.relu(self.conv(x))
        x = torch.relu(self.up1(x))
        return torch.sigmoid(self.up2(x))


@pytest.fixture(scope='module', params=[
    'openvino', 'onnxruntime'])
def exported(request, tmp_path_factory):
    torch.manual_seed(0)
    data = torch.rand(16, 3, 16, 16)
    qmodel = quantize_model(load_model(Upsampler().eval()), data,
                            request.param)
    out = str(tmp_path_factory.mktemp(request.param) / 'up_int8.onnx')
    result, parity = export_model(qmodel, out, request.param,
                                  parity_data=data)
    return request.param, result, parity


def test_weights_are_written_per_output_channel(exported):
    _, result, _ = exported
    graph = onnx.load(result.onnx_path).graph
    axes = {
        n.name: [a.i for a in n.attribute if a.name == 'axis']
        for n in graph.node if n.op_type == 'DequantizeLinear'
        and 'weight_fake_quant' in n.name and '/up' in n.name
    }
    assert axes == {'/up1/weight_fake_quant/DequantizeLinear': [1],
                    '/up2/weight_fake_quant/DequantizeLinear': [1]}


def test_parity_in_onnxruntime_and_openvino(exported):
    backend, _, parity = exported
    assert set(parity) == {'onnxruntime', 'openvino'}
    for runtime, report in parity.items():
        assert report.sqnr_db >= 35, (backend, runtime, report)


def test_openvino_runs_the_transposed_convs_in_int8(exported):
    import openvino as ov
    _, result, _ = exported
    compiled = ov.Core().compile_model(
        result.onnx_path, 'CPU', {'INFERENCE_PRECISION_HINT': 'f32'})
    layers = runtime_layers(compiled, keys=('layerType', 'runtimePrecision'))
    deconvolutions = precisions_of(compiled, 'Deconvolution')
    assert sum(deconvolutions.values()) == 2, layers
    assert set(deconvolutions) <= {'u8', 'i8'}, layers
    # the input's quantizer is the only FakeQuantize left unfused (none
    # before the second transposed conv, as with a float weight)
    assert layers[('FakeQuantize', 'f32')] <= 1, layers
