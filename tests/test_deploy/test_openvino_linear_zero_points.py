"""The zero-point of an asymmetric activation read by a linear layer moves
into the layer's bias in the OpenVINO export: the same values, and a fully
connected kernel with native weight scales and one bias add instead of
three per-channel post-ops in OpenVINO's CPU plugin.

The net: LayerNorm on tokens, ``fc1 -> Hardswish -> fc2`` (no bias, a
``MatMul`` without ``Add``) on 3-D tokens, the mean over tokens, and a 2-D
linear head (``Gemm``); activations on asymmetric uint8 grids.
"""
import numpy as np
import onnx
import pytest
import torch
from torch import nn

from mmrazor_quant.deploy import check_parity, export_model
from mmrazor_quant.deploy.openvino.passes import linear_zero_points_into_bias
from mmrazor_quant.deploy.openvino.runtime_graph import onednn_primitives
from mmrazor_quant.deploy.qparams_table import onnx_constants
from ..int8_host import int8_weight_bits
from ..test_models.test_quantizers.test_positions import UNSIGNED
from .test_openvino_placement import _quantize

ov = pytest.importorskip('openvino')
ort = pytest.importorskip('onnxruntime')

U8_ASYM = dict(UNSIGNED, is_symmetry=False)
TOKENS, WIDTH = 10, 12


class TokenHead(nn.Module):

    def __init__(self) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(WIDTH)
        self.fc1 = nn.Linear(WIDTH, 2 * WIDTH)
        self.act = nn.Hardswish()
        self.fc2 = nn.Linear(2 * WIDTH, WIDTH, bias=False)
        self.head = nn.Linear(WIDTH, 7)

    def forward(self, inputs, data_samples=None, mode='tensor'):
        x = self.fc2(self.act(self.fc1(self.norm(inputs))))
        return self.head(x.mean(1))


def _linear_zero_points(model: onnx.ModelProto):
    """Zero-points of the activation DQs that MatMul/Gemm nodes read
    directly (by the linear node's name)."""
    values = onnx_constants(model.graph)
    producers = {o: n for n in model.graph.node for o in n.output}
    found = {}
    for node in model.graph.node:
        dq = producers.get(node.input[0])
        if node.op_type in ('MatMul', 'Gemm') and dq is not None \
                and dq.op_type == 'DequantizeLinear':
            found[node.name] = int(values[dq.input[2]])
    return found


def _ort(model: onnx.ModelProto, x: np.ndarray) -> np.ndarray:
    """The ONNX semantics of the file: no QDQ fusion into int8 kernels."""
    options = ort.SessionOptions()
    options.graph_optimization_level = \
        ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    session = ort.InferenceSession(model.SerializeToString(), options,
                                   providers=['CPUExecutionProvider'])
    return session.run(None, {session.get_inputs()[0].name: x})[0]


@pytest.fixture(scope='module')
def quantized():
    torch.manual_seed(0)
    x = torch.randn(64, TOKENS, WIDTH)
    return _quantize(TokenHead().eval(), x, U8_ASYM), x


@pytest.mark.filterwarnings('ignore:onnxruntime. . of . biases')
def test_pass_moves_zero_points_into_biases(quantized, tmp_path):
    """On the onnxruntime export (which keeps the zero-points): the three
    linear layers lose theirs, the MatMul without bias gets an ``Add``, and
    the output is the file's to float rounding."""
    model, x = quantized
    path = str(tmp_path / 'ort.onnx')
    export_model(model, x[:2], path, 'onnxruntime')
    before = onnx.load(path)
    zero_points = _linear_zero_points(before)
    assert len(zero_points) == 3 and all(zero_points.values())
    after = onnx.load(path)
    assert linear_zero_points_into_bias(after) == 3
    onnx.checker.check_model(after, full_check=True)
    assert set(_linear_zero_points(after).values()) == {0}
    adds = [n for n in after.graph.node if n.name.endswith('_ov_bias')]
    assert len(adds) == 1
    sample = x[:16].numpy()
    reference = _ort(before, sample)
    np.testing.assert_allclose(_ort(after, sample), reference,
                               rtol=1e-4, atol=1e-4 * np.abs(reference).max())
    # the quantizers' grids are the file's
    assert linear_zero_points_into_bias(after) == 0


def test_openvino_export_runs_linear_layers_with_native_scales(
        quantized, tmp_path):
    model, x = quantized
    path = str(tmp_path / 'ov.onnx')
    result = export_model(model, x[:2], path, 'openvino')
    assert set(_linear_zero_points(onnx.load(path)).values()) == {0}
    for runtime in ('openvino', 'onnxruntime'):
        report = check_parity(result.deploy_model, path, x, runtime=runtime)
        assert report.agreement == 1.0 and report.sqnr_db >= 40, runtime
    if int8_weight_bits() < 8:
        pytest.skip('oneDNN kernels were checked on a CPU with VNNI')
    primitives = onednn_primitives(path, (2, TOKENS, WIDTH),
                                   {'INFERENCE_PRECISION_HINT': 'f32'})
    linear = [(mds, attrs) for (kind, _, mds, attrs, _), n
              in primitives.items() if kind in ('inner_product', 'matmul')
              for _ in range(n)]
    assert len(linear) == 3
    for mds, attrs in linear:
        # int8 input, per-channel scales as an attribute, at most the bias
        # as a binary post-op
        assert mds.startswith(('src:u8', 'src:s8')), mds
        assert 'attr-scales:wei:' in attrs, attrs
        assert attrs.count('binary_') <= 1, attrs


class ConvStack(nn.Module):
    """Hardswish outputs (asymmetric: they reach -0.375) into a 1x1 conv
    without bias, a padded depthwise 3x3 and a strided 1x1 with bias."""

    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Conv2d(3, 8, 3, padding=1)
        self.pw = nn.Conv2d(8, 16, 1, bias=False)
        self.dw = nn.Conv2d(16, 16, 3, padding=1, groups=16)
        self.pw2 = nn.Conv2d(16, 8, 1, stride=2)
        self.act = nn.Hardswish()

    def forward(self, inputs, data_samples=None, mode='tensor'):
        x = self.act(self.stem(inputs))
        x = self.act(self.pw(x))
        return self.pw2(self.act(self.dw(x)))


def _conv_zero_points(model: onnx.ModelProto):
    values = onnx_constants(model.graph)
    producers = {o: n for n in model.graph.node for o in n.output}
    return {n.name: int(values[producers[n.input[0]].input[2]])
            for n in model.graph.node if n.op_type == 'Conv'
            and producers.get(n.input[0]) is not None
            and producers[n.input[0]].op_type == 'DequantizeLinear'}


@pytest.mark.filterwarnings('ignore:onnxruntime. . of . biases')
def test_pad_free_convs_take_their_zero_points_into_the_bias(tmp_path):
    """The two 1x1 convs lose their input zero-points (the one without
    bias gains one), the padded convs keep their own; the values
    are the file's to float rounding; OpenVINO creates no 1x1 conv with a
    source zero-point attribute."""
    torch.manual_seed(0)
    x = torch.randn(32, 3, 12, 12)
    model = _quantize(ConvStack().eval(), x, U8_ASYM)
    path = str(tmp_path / 'ort.onnx')
    export_model(model, x[:2], path, 'onnxruntime')
    before = onnx.load(path)
    zero_points = _conv_zero_points(before)
    assert sorted(zero_points) == ['/dw/Conv', '/pw/Conv', '/pw2/Conv',
                                   '/stem/Conv']
    assert all(zero_points[name] for name in ('/dw/Conv', '/pw/Conv',
                                              '/pw2/Conv'))
    after = onnx.load(path)
    assert linear_zero_points_into_bias(after) == 2
    onnx.checker.check_model(after, full_check=True)
    folded = _conv_zero_points(after)
    assert folded['/pw/Conv'] == folded['/pw2/Conv'] == 0
    # padded: the stem (on the model input) and the depthwise conv
    assert folded['/dw/Conv'] == zero_points['/dw/Conv']
    assert folded['/stem/Conv'] == zero_points['/stem/Conv']
    pw = next(n for n in after.graph.node if n.name == '/pw/Conv')
    assert len(pw.input) == 3
    sample = x[:8].numpy()
    reference = _ort(before, sample)
    np.testing.assert_allclose(_ort(after, sample), reference,
                               rtol=1e-4, atol=1e-4 * np.abs(reference).max())

    ov_path = str(tmp_path / 'ov.onnx')
    result = export_model(model, x[:2], ov_path, 'openvino')
    assert _conv_zero_points(onnx.load(ov_path))['/pw/Conv'] == 0
    for runtime in ('openvino', 'onnxruntime'):
        report = check_parity(result.deploy_model, ov_path, x, runtime=runtime)
        assert report.sqnr_db >= 40, runtime
    primitives = onednn_primitives(ov_path, (2, 3, 12, 12),
                                   {'INFERENCE_PRECISION_HINT': 'f32'})
    convs = [(impl, attrs) for (kind, impl, _, attrs, _), n
             in primitives.items() if kind == 'convolution'
             for _ in range(n)]
    pointwise = [attrs for impl, attrs in convs if '1x1' in impl]
    assert pointwise, convs
    assert not any('zero-points:src' in attrs for attrs in pointwise), convs
