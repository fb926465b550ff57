"""The compiled runtime graph of our OpenVINO export against NNCF's.

For the demo MobileNetV2 and ResNet-18 and mmcls's ImageNet MobileNetV2 and
ResNet-50 at 224 pixels (the shipped PTQ configs, random weights with BN
statistics drawn as training leaves them), the layers OpenVINO's CPU plugin
executes after a call, counted by type, runtime precision and kernel, are
the same for ``export_model(..., 'openvino')`` and for ``nncf.quantize`` on
the fp32 model with the same calibration batches. A placement or export
change that leaves a residual ``Add`` out of its conv (an extra eltwise or
``Subgraph`` layer) or runs a conv in another precision or kernel fails
here. ``benchmarks/peers.py --graphs`` prints the same comparison (and the
oneDNN post-ops) for every model the benchmark times.

NNCF lives in the peers' venv (``make peers-env``); run this file with
``.venv-peers/bin/python -m pytest`` (elsewhere it is skipped).
"""
import copy
import os.path as osp

import numpy as np
import pytest
import torch
from mmengine.config import Config

from mmrazor_quant.deploy import export_model
from mmrazor_quant.deploy.openvino.runtime_graph import (
    layer_differences,
    runtime_layers,
)
from mmrazor_quant.engine.runner.calibration import calibrate
from mmrazor_quant.registry import MODELS
from mmrazor_quant.utils.batch_norms import trained_like_batch_norms
from ..int8_host import int8_weight_bits

nncf = pytest.importorskip('nncf')
ov = pytest.importorskip('openvino')

pytestmark = pytest.mark.slow

REPO = osp.dirname(osp.dirname(osp.dirname(osp.abspath(__file__))))
#: name -> (PTQ config, input (C, H, W), calibration batches x images)
CONFIGS = {
    'mobilenetv2': ('ptq_openvino_mobilenetv2_mnist.py', (3, 28, 28),
                    (4, 16)),
    'resnet18': ('ptq_openvino_resnet18_mnist.py', (1, 28, 28), (4, 16)),
    'mbv2_224': ('ptq_openvino_mbv2_8xb32_in1k_calib32xb32.py',
                 (3, 224, 224), (2, 4)),
    'resnet50': ('ptq_openvino_resnet50_8xb32_in1k_calib32xb32.py',
                 (3, 224, 224), (2, 4)),
}


class TensorMode(torch.nn.Module):
    """``arch(x, mode='tensor')`` as a plain ``forward(x)`` for NNCF."""

    def __init__(self, arch: torch.nn.Module) -> None:
        super().__init__()
        self.arch = arch

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.arch(x, mode='tensor')


def _layers(model, shape):
    """Runtime layers of ``model`` compiled and called once at ``shape``
    (the kernels are picked for the call's shape)."""
    compiled = ov.Core().compile_model(
        model, 'CPU', {'INFERENCE_NUM_THREADS': 1, 'NUM_STREAMS': 1})
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    compiled.create_infer_request().infer([x])
    return runtime_layers(compiled)


@pytest.mark.parametrize('name', sorted(CONFIGS))
def test_runtime_graph_matches_nncf(name, tmp_path):
    if int8_weight_bits() < 8:
        pytest.skip('the runtime graphs were compared on a CPU with VNNI')
    config, shape, (num_batches, batch_size) = CONFIGS[name]
    cfg = Config.fromfile(
        osp.join(REPO, 'configs/quantization/ptq', config))
    torch.manual_seed(0)
    arch = MODELS.build(copy.deepcopy(cfg.model.architecture)).eval()
    trained_like_batch_norms(arch)
    gen = torch.Generator().manual_seed(0)
    data = [dict(inputs=torch.randint(0, 256, (batch_size, *shape),
                                      generator=gen, dtype=torch.uint8),
                 data_samples=None) for _ in range(num_batches)]

    model_cfg = copy.deepcopy(cfg.model)
    model_cfg.update(architecture=copy.deepcopy(arch), float_checkpoint=None)
    ours = MODELS.build(model_cfg).eval()
    # as the PTQ loop calibrates: observers on, fake quants off
    calibrate(ours, data, num_batches, show_progress=False)
    with torch.no_grad():
        calib = [ours.data_preprocessor(batch, False)['inputs'].float()
                 for batch in data]
    path = str(tmp_path / 'ours.onnx')
    export_model(ours, calib[0][:2], path, 'openvino')

    fp32 = ov.convert_model(TensorMode(arch).eval(),
                            example_input=calib[0][:1],
                            input=[(-1, *shape)])
    theirs = nncf.quantize(fp32, nncf.Dataset([b.numpy() for b in calib]),
                           subset_size=len(calib))
    ours_layers = _layers(path, (2, *shape))
    nncf_layers = _layers(theirs, (2, *shape))
    assert ours_layers == nncf_layers, \
        f'(ours, NNCF): {layer_differences(ours_layers, nncf_layers)}'
    assert not any(kind in ('Subgraph', 'Eltwise')
                   for kind, *_ in ours_layers)
