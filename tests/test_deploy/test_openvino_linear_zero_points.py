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
