"""OpenVINOQuantizer's placement, pinned by hand from what OpenVINO's CPU
plugin executes: fake-quant positions on a residual block, a concat and an
attention block, then the compiled runtime model of the exported QDQ ONNX
(which layers exist, which run in int8) and its parity with the simulation.

Residual block (``ResidualBlockNet``): ``conv1 -> [conv5 -> conv2] + conv1
-> relu2 -> maxpool -> cat(conv3, conv4) -> global avg pool -> flatten ->
fc``. The plugin fuses the add (and ReLU and the next fake quant) into
conv2 as a sum post-op, so conv2's output stays float and only the other
operand is quantized; the fake quants before max pooling and flatten move
onto their inputs, so both run in u8 and fuse into the producer.

Attention (``AttentionBlockNet``, transformer placement, signed symmetric
activations): q and k share one fake quant on the permuted qkv tensor
before the split, v reads the float tensor, and the plugin runs the gathers,
``Q @ K^T``, softmax and ``attn @ V`` as one int8 subgraph.
"""
import collections

import pytest
import torch
from torch import nn

from mmrazor_quant.deploy import check_parity, export_model
from mmrazor_quant.models.fake_quants import disable_observer
from mmrazor_quant.models.quantizers import OpenVINOQuantizer
from mmrazor_quant.registry import MODELS
from ..int8_host import int8_weight_bits
from ..test_models.test_quantizers.test_positions import (
    UNSIGNED,
    fake_quant_consumers,
    qconfig,
)
from ..test_models.test_quantizers.toy_models import AttentionBlockNet

ov = pytest.importorskip('openvino')

U8_SYM = dict(UNSIGNED, is_symmetry=True)
S8_SYM = dict(qdtype='qint8', bit=8, is_symmetry=True)


class ResidualBlockNet(nn.Module):
    """A stem conv, a basic residual block whose add OpenVINO can fuse (the
    branch is two convs, so the identity is not the fused conv's input), max
    pooling, two 1x1 convs concatenated, global average pooling, flatten
    and a linear head."""

    def __init__(self, width: int = 8) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(3, width, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(width)
        self.relu1 = nn.ReLU()
        self.conv5 = nn.Conv2d(width, width, 3, padding=1)
        self.bn5 = nn.BatchNorm2d(width)
        self.relu5 = nn.ReLU()
        self.conv2 = nn.Conv2d(width, width, 3, padding=1)
        self.bn2 = nn.BatchNorm2d(width)
        self.relu2 = nn.ReLU()
        self.pool = nn.MaxPool2d(2)
        self.conv3 = nn.Conv2d(width, width, 1)
        self.conv4 = nn.Conv2d(width, width, 1)
        self.gap = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(2 * width, 5)

    def forward(self, inputs, data_samples=None, mode='tensor'):
        y = self.relu1(self.bn1(self.conv1(inputs)))
        z = self.bn2(self.conv2(self.relu5(self.bn5(self.conv5(y)))))
        p = self.pool(self.relu2(z + y))
        c = torch.cat([self.conv3(p), self.conv4(p)], 1)
        return self.fc(torch.flatten(self.gap(c), 1))


#: fake quant -> its consumers, derived by hand (see the module docstring)
RESIDUAL_POSITIONS = {
    'inputs': ['conv1'],
    'conv1': ['add', 'conv5'],  # the identity operand of the add
    'conv5': ['conv2'],
    'relu2': ['pool'],  # before max pooling
    'cat': ['gap'],
    'gap': ['flatten'],  # before flatten: the pooling's output
}
ATTENTION_POSITIONS = {
    'norm1': ['qkv'],
    'permute': ['getitem', 'getitem_1'],  # q and k, before the split
    'matmul_1': ['transpose_1'],  # proj's input, before transpose/reshape
    'norm2': ['fc1'],
    'act': ['fc2'],
    'mean': ['head'],
}


def _quantize(net: nn.Module, x: torch.Tensor, a_qscheme: dict, **kwargs):
    """Calibrated on ``x``; 7-bit weights where this CPU's int8 kernels
    saturate (``int8_host``)."""
    global_qconfig = qconfig(a_qscheme)
    global_qconfig['w_qscheme'] = dict(global_qconfig['w_qscheme'],
                                       bit=int8_weight_bits())
    model = MODELS.build(
        dict(
            type='mmrazor_quant.MMArchitectureQuant',
            architecture=net.eval(),
            forward_modes=('tensor', ),
            quantizer=dict(
                type='mmrazor_quant.OpenVINOQuantizer',
                global_qconfig=global_qconfig,
                **kwargs))).eval()
    with torch.no_grad():
        model(x, mode='tensor')
    disable_observer(model)
    return model


def _runtime_layers(path: str):
    """``(layer type, runtime precision, fused original layer names)`` of
    every non-constant layer OpenVINO's CPU plugin executes."""
    compiled = ov.Core().compile_model(
        path, 'CPU', {'INFERENCE_PRECISION_HINT': 'f32'})
    layers = []
    for op in compiled.get_runtime_model().get_ordered_ops():
        info = op.get_rt_info()
        kind = info['layerType'].astype(str)
        if kind not in ('Const', 'Input', 'Output', 'Reorder', 'Reshape'):
            layers.append((kind, info['runtimePrecision'].astype(str),
                           info['originalLayersNames'].astype(str)))
    return layers


def _export(model, x, tmp_path):
    path = str(tmp_path / 'model.onnx')
    result = export_model(model, x[:2], path, 'openvino')
    report = check_parity(result.deploy_model, path, x, runtime='openvino')
    print(report.format())
    return path, report


def _positions(net: nn.Module, a_qscheme: dict, **kwargs) -> dict:
    quantizer = OpenVINOQuantizer(global_qconfig=qconfig(a_qscheme), **kwargs)
    return fake_quant_consumers(
        quantizer.prepare(net, ('tensor', ))['tensor'].graph)


def test_residual_block_and_concat_positions():
    assert _positions(ResidualBlockNet(), U8_SYM) == RESIDUAL_POSITIONS


def test_residual_block_runs_fused_in_int8(tmp_path):
    torch.manual_seed(0)
    x = torch.randn(64, 3, 8, 8)
    model = _quantize(ResidualBlockNet(), x, U8_SYM)
    path, report = _export(model, x, tmp_path)
    assert report.agreement == 1.0 and report.sqnr_db >= 45  # 67 dB
    if int8_weight_bits() < 8:
        pytest.skip('the fused int8 runtime graph was checked on a CPU with '
                    'VNNI; this one has none (other int8 kernels)')
    layers = _runtime_layers(path)
    kinds = collections.Counter(kind for kind, _, _ in layers)
    # one FakeQuantize (the image input); no standalone eltwise: the add
    # and its ReLU are conv2's post-ops
    assert kinds == {'FakeQuantize': 1, 'Convolution': 5, 'Pooling': 1,
                     'Concatenation': 1, 'Reduce': 1, 'FullyConnected': 1}
    fused_add = [names for kind, _, names in layers if '/Add' in names]
    assert len(fused_add) == 1 and '/conv2/' in fused_add[0]
    # every compute layer, max pooling, concat and the pooling run in int8:
    # u8 on the ReLU outputs, i8 on the signed tensors (the image, the
    # concat of conv3 and conv4 without ReLU), written as int8
    assert [(kind, prec) for kind, prec, _ in layers
            if kind != 'FakeQuantize'] == [
                ('Convolution', 'i8'), ('Convolution', 'u8'),
                ('Convolution', 'u8'), ('Pooling', 'u8'),
                ('Convolution', 'u8'), ('Convolution', 'u8'),
                ('Concatenation', 'i8'), ('Reduce', 'i8'),
                ('FullyConnected', 'i8')]


def test_attention_positions_and_int8_subgraph(tmp_path):
    torch.manual_seed(0)
    x = torch.randn(64, 6, 16)
    assert _positions(AttentionBlockNet(), S8_SYM,
                      model_type='transformer') == ATTENTION_POSITIONS
    model = _quantize(AttentionBlockNet(), x, S8_SYM,
                      model_type='transformer')
    path, report = _export(model, x, tmp_path)
    assert report.agreement == 1.0 and report.sqnr_db >= 45  # 57 dB
    if int8_weight_bits() < 8:
        pytest.skip('the int8 attention subgraph was checked on a CPU with '
                    'VNNI; this one has none')
    layers = _runtime_layers(path)
    fake_quants = [names for kind, _, names in layers
                   if kind == 'FakeQuantize']
    assert len(fake_quants) == 1 and 'permute' in fake_quants[0]
    gathers = sorted(prec for kind, prec, _ in layers if kind == 'Gather')
    assert gathers == ['f32', 'i8', 'i8']  # v, q, k
    # Q @ K^T, softmax and attn @ V: one int8 subgraph
    attention = [(prec, names) for kind, prec, names in layers
                 if 'Softmax' in names]
    assert len(attention) == 1 and attention[0][0] == 'i8'
    assert '/MatMul_1' in attention[0][1]
