"""The deploy fake quant's ONNX-spec arithmetic (``round(x / s)``) against
onnxruntime's ``QuantizeLinear`` on exact ties: means of two values of one
grid, as an adaptive average pool with overlapping bins computes them."""
import numpy as np
import onnx
import pytest
import torch
from onnx import TensorProto, helper
from torch import nn

from mmrazor_quant.deploy.qdq_fake_quantize import (
    QDQFakeQuantize,
    quantize_by_division,
)
from mmrazor_quant.deploy.runtimes import get_runtime, load_runtime
from mmrazor_quant.models.fake_quants import FakeQuantize
from tests.test_models.test_fake_quants.helpers import observer


@pytest.fixture(scope='module')
def deploy_fake_quant():
    """TensorRT's grid, signed symmetric ``[-127, 127]``, with the scale
    0.03 (a range of +-3.81)."""
    fake_quant = FakeQuantize(
        observer(bit=8, qdtype='qint8', is_symmetry=True,
                 is_symmetric_range=True))
    fake_quant(torch.tensor([-3.81, 3.81]))
    return QDQFakeQuantize.from_fake_quant(fake_quant)


def _means_of_two(scale: float) -> torch.Tensor:
    """``(a s + b s) / 2`` in float32 for every pair of codes in
    ``[-127, 127]``: half of them land on ``k + 1/2`` steps."""
    codes = torch.arange(-127, 128, dtype=torch.float32)
    a, b = torch.meshgrid(codes, codes, indexing='ij')
    s = torch.tensor(scale, dtype=torch.float32)
    return ((a * s + b * s) / 2).reshape(-1)


def _onnxruntime_codes(x: torch.Tensor, scale: float, path: str):
    graph = helper.make_graph(
        [helper.make_node('QuantizeLinear', ['x', 's', 'z'], ['q'])], 'q',
        [helper.make_tensor_value_info('x', TensorProto.FLOAT, [None])],
        [helper.make_tensor_value_info('q', TensorProto.INT8, [None])],
        [helper.make_tensor('s', TensorProto.FLOAT, [], [scale]),
         helper.make_tensor('z', TensorProto.INT8, [], [0])])
    model = helper.make_model(graph,
                              opset_imports=[helper.make_opsetid('', 17)])
    model.ir_version = 8
    onnx.save(model, path)
    return load_runtime('onnxruntime', path)(x.numpy()).astype(np.int64)


def test_division_rounds_ties_as_onnxruntime(deploy_fake_quant, tmp_path):
    fq = deploy_fake_quant
    scale = float(fq.scale)
    assert scale == pytest.approx(0.03)
    x = _means_of_two(scale)
    runtime = _onnxruntime_codes(x, scale, str(tmp_path / 'q.onnx'))
    with torch.no_grad():
        kernel = torch.round(fq(x) / fq.scale).long().numpy()
        with quantize_by_division(nn.Sequential(fq)):
            spec = torch.round(fq(x) / fq.scale).long().numpy()
    # the training kernels' x * (1/s) rounds 14.7% of these means the other
    # way (ties it misses); the division agrees with the runtime on all
    assert (kernel != runtime).mean() == pytest.approx(0.147, abs=1e-3)
    assert (spec == runtime).all()
    # the block restores the kernels' arithmetic
    assert not fq.divides
    np.testing.assert_array_equal(
        torch.round(fq(x) / fq.scale).long().numpy(), kernel)


def test_which_runtimes_divide():
    """Each runtime plugin declares it; nothing matches a name."""
    assert get_runtime('onnxruntime').quantizes_by == 'division'
    assert get_runtime('openvino').quantizes_by == 'multiplication'
    assert get_runtime('litert').quantizes_by == 'multiplication'
