"""Signed tensors on an unsigned symmetric grid (zero-point 128) are written
for OpenVINO as int8 with zero-point 0: the same values in every runtime,
and i8 conv kernels in OpenVINO's CPU plugin instead of u8 kernels with
zero-point compensation.

The net: a stem conv without ReLU (a signed residual stream, as between
MobileNetV2's blocks), an inverted-residual branch (expand 1x1 + ReLU,
linear 1x1 projection) added to it, a conv on the signed sum, global
pooling and a linear head.
"""
import collections
import copy

import numpy as np
import onnx
import pytest
import torch
from torch import nn

from mmrazor_quant.deploy import check_parity, export_model
from mmrazor_quant.deploy.openvino.passes import signed_grids_as_int8
from mmrazor_quant.deploy.qparams_table import onnx_constants
from ..int8_host import int8_weight_bits
from .test_openvino_placement import U8_SYM, _quantize, _runtime_layers

ov = pytest.importorskip('openvino')
ort = pytest.importorskip('onnxruntime')


class SignedResidualNet(nn.Module):

    def __init__(self, width: int = 8) -> None:
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, width, 3, padding=1),
                                  nn.BatchNorm2d(width))
        self.expand = nn.Sequential(nn.Conv2d(width, 2 * width, 1),
                                    nn.BatchNorm2d(2 * width), nn.ReLU())
        self.project = nn.Sequential(nn.Conv2d(2 * width, width, 1),
                                     nn.BatchNorm2d(width))
        self.conv = nn.Conv2d(width, width, 3, padding=1)
        self.gap = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(width, 5)

    def forward(self, inputs, data_samples=None, mode='tensor'):
        x = self.stem(inputs)
        x = x + self.project(self.expand(x))
        return self.fc(torch.flatten(self.gap(self.conv(x)), 1))


def _zero_points(model: onnx.ModelProto):
    """``(dtype, value)`` of every activation Q/DQ zero-point (scalars)."""
    values = onnx_constants(model.graph)
    found = collections.Counter()
    for node in model.graph.node:
        if node.op_type in ('QuantizeLinear', 'DequantizeLinear') \
                and len(node.input) > 2:
            zp = values[node.input[2]]
            if zp.ndim == 0:
                found[(str(zp.dtype), int(zp))] += 1
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
def exported(tmp_path_factory):
    torch.manual_seed(0)
    x = torch.randn(64, 3, 8, 8)
    model = _quantize(SignedResidualNet().eval(), x, U8_SYM)
    path = str(tmp_path_factory.mktemp('signed') / 'model.onnx')
    result = export_model(model, x[:2], path, 'openvino')
    return result, path, x


def test_pass_rewrites_only_the_midpoint_grids():
    """uint8 zero-point 128 -> int8 0; uint8 0 (after ReLU) is kept; the
    values are bit-identical in onnxruntime."""
    from .test_graph_passes import _residual_model
    model = _residual_model()
    for init in model.graph.initializer:
        if init.name == 'z':
            init.CopyFrom(onnx.numpy_helper.from_array(
                np.array(128, np.uint8), 'z'))
    x = np.random.default_rng(0).normal(size=(1, 4, 6, 6)).astype(np.float32)
    before = _ort(model, x)
    rewritten = copy.deepcopy(model)
    assert signed_grids_as_int8(rewritten) == 4  # x's and c's Q/DQ pairs
    assert _zero_points(rewritten) == {('int8', 0): 6}  # + the weight's
    np.testing.assert_array_equal(_ort(rewritten, x), before)
    unsigned = _residual_model()  # zero-point 0: a post-ReLU grid
    assert signed_grids_as_int8(unsigned) == 0


def test_export_writes_signed_grids_as_int8(exported):
    result, path, x = exported
    model = onnx.load(path)
    zero_points = _zero_points(model)
    assert ('uint8', 128) not in zero_points
    # the stem's and the sum's outputs (signed), the expand ReLU's (u8)
    assert zero_points[('int8', 0)] >= 4 and zero_points[('uint8', 0)] >= 2
    report = check_parity(result.deploy_model, path, x, runtime='openvino')
    assert report.agreement == 1.0 and report.sqnr_db >= 45


def test_convs_on_signed_tensors_run_i8_kernels(exported):
    if int8_weight_bits() < 8:
        pytest.skip('int8 kernel precisions were checked on a CPU with VNNI')
    _, path, _ = exported
    layers = _runtime_layers(path)
    convs = {names.split('/')[1]: prec for kind, prec, names in layers
             if kind == 'Convolution'}
    # the stem (signed image), expand (the stem's output) and conv (the
    # signed sum) in i8; project reads the ReLU's u8 output, and the add is
    # its sum post-op
    assert convs == {'stem.0': 'i8', 'expand.0': 'i8', 'project.0': 'u8',
                     'conv': 'i8'}
    assert [kind for kind, _, names in layers if '/Add' in names] \
        == ['Convolution']
