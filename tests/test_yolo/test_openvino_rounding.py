"""Why the YOLO OpenVINO configs quantize activations asymmetrically.

OpenVINO's CPU ``FakeQuantize`` rounds ``x / s + zero_point`` in float32,
the simulation (and onnxruntime) round ``x / s`` and add the zero-point as
an integer. A SiLU output reaches -0.28, so a symmetric ``quint8`` grid puts
its zero-point at 128: every ``x / s + 128`` lies in [128, 256), where
float32's spacing is 1.5e-5, and a value within 7.6e-6 steps of a tie is
rounded as the tie (to even), half the time the other way. The configs'
asymmetric grid has a zero-point of a few steps, where the spacing is 64x
finer.
"""
import numpy as np
import onnx
import pytest
import torch
from mmengine.config import Config
from onnx import TensorProto, helper, numpy_helper

from mmrazor_quant.deploy.runtimes import load_runtime
from mmrazor_quant.models.fake_quants.utils import disable_observer
from mmrazor_quant.structures.quantization.qconfig import QConfigHandler
from .tiny_yolos import REPO

CONFIGS = [
    'configs/quantization/ptq/yolo/ptq_openvino_yolov5_n_digits.py',
    'configs/quantization/ptq/yolo/ptq_openvino_rtmdet_tiny_digits.py',
]
#: Offset of the inputs from the ties, in steps: far above the simulation's
#: float32 error on x / s < 40, below half of float32's spacing at 128.
DELTA = 5e-6


def _qdq_model(scale: float, zero_point: int) -> onnx.ModelProto:
    inits = [numpy_helper.from_array(np.array(scale, np.float32), 's'),
             numpy_helper.from_array(np.array(zero_point, np.uint8), 'z')]
    nodes = [helper.make_node('QuantizeLinear', ['x', 's', 'z'], ['q']),
             helper.make_node('DequantizeLinear', ['q', 's', 'z'], ['y'])]
    graph = helper.make_graph(
        nodes, 'qdq', [helper.make_tensor_value_info('x', TensorProto.FLOAT,
                                                     [1, None])],
        [helper.make_tensor_value_info('y', TensorProto.FLOAT, [1, None])],
        inits)
    return helper.make_model(graph, ir_version=8,
                             opset_imports=[helper.make_opsetid('', 17)])


def _silu_fake_quant(config: str, **a_qscheme):
    """The config's activation fake quant (``a_qscheme`` updated),
    calibrated on SiLU outputs."""
    cfg = Config.fromfile(f'{REPO}/{config}')
    cfg.global_qconfig.a_qscheme.update(a_qscheme)
    fq = QConfigHandler(cfg.global_qconfig).build_activation_fake_quant()
    torch.manual_seed(0)
    x = torch.randn(4096) * 3
    fq(x * torch.sigmoid(x))
    disable_observer(fq)
    return fq


def _mismatch(fq, scale: float, zero_point: int, runtime: str,
              tmp_path) -> float:
    """Fraction of near-tie inputs the runtime rounds unlike ``fq``."""
    # x / s = k + 0.5 +- DELTA for the codes of SiLU's usual values
    ties = np.arange(-zero_point, 32) + 0.5 if zero_point < 128 else \
        np.arange(-3, 32) + 0.5
    steps = np.concatenate([ties + DELTA, ties - DELTA])
    x = (steps * scale).astype(np.float32)[None]
    path = str(tmp_path / f'qdq_{zero_point}.onnx')
    onnx.save(_qdq_model(scale, zero_point), path)
    out = load_runtime(runtime, path)(x)
    with torch.no_grad():
        sim = fq(torch.from_numpy(x)).numpy()
    return float(np.mean(np.round((out - sim) / scale) != 0))


@pytest.mark.parametrize('config', CONFIGS)
def test_config_grid_rounds_near_ties_like_the_simulation(config, tmp_path):
    fq = _silu_fake_quant(config)
    scale = float(fq.scale)
    zero_point = int(fq.zero_point)
    # s = (12.30 + 0.28) / 255 on these samples, z = round(0.28 / s)
    assert zero_point == 6
    for runtime in ('openvino', 'onnxruntime'):
        assert _mismatch(fq, scale, zero_point, runtime, tmp_path) == 0, \
            runtime


def test_symmetric_grid_rounds_near_ties_as_ties_in_openvino(tmp_path):
    """The symmetric grid of the same tensor: zero-point 128; onnxruntime
    still rounds like the simulation, OpenVINO as ties: 46 % of them the
    other way (ties to even)."""
    fq = _silu_fake_quant(CONFIGS[0], is_symmetry=True)
    scale, zero_point = float(fq.scale), int(fq.zero_point)
    assert zero_point == 128
    assert _mismatch(fq, scale, zero_point, 'onnxruntime', tmp_path) == 0
    assert _mismatch(fq, scale, zero_point, 'openvino',
                     tmp_path) == pytest.approx(0.457, abs=0.05)
