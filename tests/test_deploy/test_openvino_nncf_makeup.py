"""The compiled runtime graph of our OpenVINO export against NNCF's.

For the demo MobileNetV2 and ResNet-18 and mmcls's ImageNet MobileNetV2 and
ResNet-50 at 224 pixels (the shipped PTQ configs, random weights with BN
statistics drawn as training leaves them), the layers OpenVINO's CPU plugin
executes after a call, counted by type, runtime precision and kernel, are
the same for ``export_model(..., 'openvino')`` and for ``nncf.quantize`` on
the fp32 model with the same calibration batches. A placement or export
change that leaves a residual ``Add`` out of its conv (an extra eltwise or
``Subgraph`` layer) or runs a conv in another precision or kernel fails
here. PP-OCRv4's recogniser (real trained weights, the front door's
defaults) compiles to no more layers than NNCF's export, with no fewer int8
convs and linear layers and no more post-ops in its fully connected
kernels. ``benchmarks/peers.py --graphs`` prints the same comparison (and the
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
    onednn_primitives,
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


def _static(path: str, shape, out: str) -> str:
    """``path`` reshaped to ``shape`` and saved as IR (as the benchmark
    compiles it: static shapes, as deployed)."""
    model = ov.Core().read_model(path)
    model.reshape({model.inputs[0].any_name: list(shape)})
    ov.save_model(model, out)
    return out


def _binary_post_ops(primitives, kind: str) -> int:
    """The most binary post-ops (a per-channel pass over the output each)
    one oneDNN primitive of ``kind`` carries."""
    return max(attrs.count('binary_')
               for (k, _, _, attrs, _) in primitives if k == kind)


def test_ocr_recogniser_no_worse_than_nncf(tmp_path):
    """PP-OCRv4's recogniser (rapidocr's trained weights), the front door's
    defaults against NNCF's default preset on the same 32 rendered words,
    compiled at the benchmark's shape (1x3x48x320): every conv and linear
    layer NNCF runs in int8 runs in int8 in ours, ours executes no more
    layers and fuses every FakeQuantize, and its fully connected kernels
    carry no more per-channel binary post-ops than NNCF's (the bias: an
    activation's zero-point is in it, not a post-op of its own)."""
    if int8_weight_bits() < 8:
        pytest.skip('the runtime graphs were compared on a CPU with VNNI')
    ocr = pytest.importorskip('benchmarks.real_models.ocr')
    reason = ocr.missing_reason()
    if reason:
        pytest.skip(reason)
    from benchmarks import onnx_models as bench
    fp32 = ocr.prepared_model(ocr.model_paths()['rec'],
                              str(tmp_path / 'fp32_rec.onnx'))
    calib = ocr.rec_inputs(ocr.render_words(32, seed=0)[0])
    shape = (1, *ocr.REC_SHAPE)
    files = {}
    for name, quantize in (('ours', bench.quantize_ours('openvino')),
                           ('nncf', bench.quantize_nncf(None, None))):
        quantize(fp32, calib, str(tmp_path / f'{name}.onnx'))
        files[name] = _static(str(tmp_path / f'{name}.onnx'), shape,
                              str(tmp_path / f'{name}.xml'))
    layers = {name: _layers(path, shape) for name, path in files.items()}
    config = {'INFERENCE_NUM_THREADS': 2, 'INFERENCE_PRECISION_HINT': 'f32'}
    primitives = {name: onednn_primitives(path, shape, config)
                  for name, path in files.items()}

    def int8_layers(name):
        return sum(n for (kind, precision, _), n in layers[name].items()
                   if kind in ('Convolution', 'FullyConnected')
                   and precision in ('u8', 'i8'))

    diff = layer_differences(layers['ours'], layers['nncf'])
    assert int8_layers('ours') >= int8_layers('nncf'), diff
    assert sum(layers['ours'].values()) <= sum(layers['nncf'].values()), diff
    assert not any(kind == 'FakeQuantize' for kind, *_ in layers['ours'])
    assert _binary_post_ops(primitives['ours'], 'inner_product') \
        <= _binary_post_ops(primitives['nncf'], 'inner_product')
