"""The compiled runtime graph of our OpenVINO export against NNCF's.

For the demo MobileNetV2 and ResNet-18 (the shipped PTQ configs, random
weights with BN statistics drawn as training leaves them), the layers
OpenVINO's CPU plugin executes, counted by type and runtime precision, are
the same for ``export_model(..., 'openvino')`` and for ``nncf.quantize`` on
the fp32 model with the same calibration batches. A placement or export
change that leaves a residual ``Add`` out of its conv (an extra eltwise or
``Subgraph`` layer) or runs a conv in another precision fails here.

NNCF lives in the peers' venv (``make peers-env``); run this file with
``.venv-peers/bin/python -m pytest`` (elsewhere it is skipped).
"""
import collections
import copy
import os.path as osp

import pytest
import torch
from mmengine.config import Config

from mmrazor_quant.deploy import export_model
from mmrazor_quant.models.fake_quants import disable_observer
from mmrazor_quant.registry import MODELS
from ..int8_host import int8_weight_bits

nncf = pytest.importorskip('nncf')
ov = pytest.importorskip('openvino')

pytestmark = pytest.mark.slow

REPO = osp.dirname(osp.dirname(osp.dirname(osp.abspath(__file__))))
CONFIGS = {
    'mobilenetv2': ('ptq_openvino_mobilenetv2_mnist.py', 3),
    'resnet18': ('ptq_openvino_resnet18_mnist.py', 1),
}


class TensorMode(torch.nn.Module):
    """``arch(x, mode='tensor')`` as a plain ``forward(x)`` for NNCF."""

    def __init__(self, arch: torch.nn.Module) -> None:
        super().__init__()
        self.arch = arch

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.arch(x, mode='tensor')


def _trained_like(arch: torch.nn.Module) -> None:
    """BN statistics and affine parameters as training leaves them: as
    initialised, every folded bias is zero, which no deployed model has."""
    gen = torch.Generator().manual_seed(1)
    for bn in arch.modules():
        if isinstance(bn, torch.nn.modules.batchnorm._BatchNorm):
            size = (bn.num_features, )
            with torch.no_grad():
                bn.weight.copy_(0.5 + 0.5 * torch.rand(size, generator=gen))
                bn.bias.copy_(0.1 * torch.randn(size, generator=gen))
                bn.running_mean.copy_(0.1 * torch.randn(size, generator=gen))
                bn.running_var.copy_(0.5 + torch.rand(size, generator=gen))


def _layers(model) -> collections.Counter:
    """``(layer type, runtime precision)`` counts of the compiled model."""
    compiled = ov.Core().compile_model(
        model, 'CPU', {'INFERENCE_NUM_THREADS': 1, 'NUM_STREAMS': 1})
    counts = collections.Counter()
    for op in compiled.get_runtime_model().get_ordered_ops():
        info = op.get_rt_info()
        counts[(info['layerType'].astype(str),
                info['runtimePrecision'].astype(str))] += 1
    return counts


@pytest.mark.parametrize('name', sorted(CONFIGS))
def test_runtime_graph_matches_nncf(name, tmp_path):
    if int8_weight_bits() < 8:
        pytest.skip('the runtime graphs were compared on a CPU with VNNI')
    config, channels = CONFIGS[name]
    cfg = Config.fromfile(
        osp.join(REPO, 'configs/quantization/ptq', config))
    torch.manual_seed(0)
    arch = MODELS.build(copy.deepcopy(cfg.model.architecture)).eval()
    _trained_like(arch)
    gen = torch.Generator().manual_seed(0)
    calib = [torch.randn(16, channels, 28, 28, generator=gen)
             for _ in range(4)]

    model_cfg = copy.deepcopy(cfg.model)
    model_cfg.update(architecture=copy.deepcopy(arch), float_checkpoint=None)
    ours = MODELS.build(model_cfg).eval()
    with torch.no_grad():
        for batch in calib:
            ours(batch, mode='tensor')
    disable_observer(ours)
    path = str(tmp_path / 'ours.onnx')
    export_model(ours, calib[0][:2], path, 'openvino')

    fp32 = ov.convert_model(TensorMode(arch).eval(),
                            example_input=calib[0][:1],
                            input=[(-1, channels, 28, 28)])
    theirs = nncf.quantize(fp32, nncf.Dataset([b.numpy() for b in calib]),
                           subset_size=len(calib))
    ours_layers, nncf_layers = _layers(path), _layers(theirs)
    assert ours_layers == nncf_layers, (
        f'ours - NNCF: {ours_layers - nncf_layers}; '
        f'NNCF - ours: {nncf_layers - ours_layers}')
    assert not any(kind in ('Subgraph', 'Eltwise')
                   for kind, _ in ours_layers)
