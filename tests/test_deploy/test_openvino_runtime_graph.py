"""The make-up of what OpenVINO's CPU plugin executes (runtime layers and
oneDNN primitives with their post-ops), on a conv + ReLU written as ONNX."""
import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

from mmrazor_quant.deploy.openvino.runtime_graph import (
    layer_differences,
    onednn_primitives,
    runtime_layers,
)

ov = pytest.importorskip('openvino')

CONFIG = {'INFERENCE_NUM_THREADS': 1, 'NUM_STREAMS': 1,
          'INFERENCE_PRECISION_HINT': 'f32'}


def _conv_relu(path) -> str:
    """``Relu(Conv(x, w) + b) * 0.5``: 8 -> 16 channels, 3x3, dynamic
    batch; the multiply by a constant is a scale-shift the plugin fuses."""
    rng = np.random.default_rng(0)
    weight = numpy_helper.from_array(
        rng.standard_normal((16, 8, 3, 3)).astype(np.float32), 'w')
    bias = numpy_helper.from_array(
        rng.standard_normal(16).astype(np.float32), 'b')
    half = numpy_helper.from_array(np.array(0.5, np.float32), 'half')
    graph = helper.make_graph(
        [helper.make_node('Conv', ['x', 'w', 'b'], ['c'], pads=[1] * 4),
         helper.make_node('Relu', ['c'], ['r']),
         helper.make_node('Mul', ['r', 'half'], ['y'])],
        'conv_relu',
        [helper.make_tensor_value_info('x', TensorProto.FLOAT,
                                       ['n', 8, 10, 10])],
        [helper.make_tensor_value_info('y', TensorProto.FLOAT,
                                       ['n', 16, 10, 10])],
        [weight, bias, half])
    model = helper.make_model(graph, opset_imports=[
        helper.make_opsetid('', 17)])
    path = str(path / 'conv_relu.onnx')
    with open(path, 'wb') as f:
        f.write(model.SerializeToString())
    return path


def test_runtime_layers_count_the_fused_conv(tmp_path):
    path = _conv_relu(tmp_path)
    compiled = ov.Core().compile_model(path, 'CPU', CONFIG)
    compiled.create_infer_request().infer(
        [np.zeros((2, 8, 10, 10), np.float32)])
    layers = runtime_layers(compiled)
    # ReLU and the multiply run inside the conv: no eltwise layer, only
    # layout reorders and the bias's reshape beside it
    kinds = [kind for (kind, *_), n in layers.items() for _ in range(n)]
    assert kinds.count('Convolution') == 1
    assert set(kinds) <= {'Convolution', 'Reorder', 'Reshape'}
    assert all(precision == 'f32' for _, precision, _ in layers)
    with_io = runtime_layers(compiled, keys=('layerType', ),
                             executed_only=False)
    assert with_io[('Input', )] == 1 and with_io[('Output', )] == 1
    assert layer_differences(layers, layers) == {}


def test_onednn_primitives_name_the_post_ops(tmp_path):
    path = _conv_relu(tmp_path)
    primitives = onednn_primitives(path, (2, 8, 10, 10), CONFIG)
    convs = [p for p in primitives if p[0] == 'convolution']
    assert len(convs) == 1
    kind, impl, mds, attrs, problem = convs[0]
    assert 'src:f32' in mds and 'dst:f32' in mds
    # the fused ReLU and scale, without the scale's value
    assert attrs.endswith('attr-post-ops:eltwise_relu+eltwise_linear')
    assert problem.startswith('mb2_ic8oc16_ih10oh10kh3')
    assert sum(n for p, n in primitives.items() if p[0] == 'reorder') >= 1
