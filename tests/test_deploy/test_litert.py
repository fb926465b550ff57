"""LiteRT: the int8 ``.tflite`` carries the model's qparams and LiteRT's
interpreter follows the simulation; fixed scales; refused inputs."""
import copy
import os
import sys

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from mmengine.model import BaseModel
from torch import nn

from mmrazor_quant.analysis.model_check import (
    calibrate_and_freeze,
    quantize_w8a8,
)
from mmrazor_quant.deploy import (
    QDQFakeQuantize,
    WeightQuantizedLayer,
    build_exporter,
    check_parity,
    export_model,
)
from mmrazor_quant.deploy.litert import UnsupportedOpError
from mmrazor_quant.deploy.parity import output_step
from mmrazor_quant.deploy.runtimes import load_runtime
from mmrazor_quant.models.fake_quants import FixedFakeQuantize
from mmrazor_quant.models.quantizers.litert_int8_matmul import (
    tflite_int8_matmul,
)
from mmrazor_quant.models.quantizers.litert_quantizer import SOFTMAX_QPARAMS
from mmrazor_quant.models.utils import tensor_graph_module
from mmrazor_quant.utils.sqnr import sqnr_db
from ..test_models.test_quantizers.toy_models import AttentionBlockNet

litert = pytest.importorskip(
    'ai_edge_litert.interpreter',
    reason='LiteRT is not installed: run `make litert`')


class SmallNet(BaseModel):
    """The CNN ops of the demo models at toy size: a strided stem, a
    residual block (ADD with a fused ReLU), a MobileNetV2-style depthwise
    block with ReLU6, global average pooling and a linear head."""

    def __init__(self, width: int = 16) -> None:
        super().__init__()

        def conv_bn(cin, cout, k, stride=1, groups=1):
            return nn.Sequential(
                nn.Conv2d(cin, cout, k, stride, k // 2, groups=groups,
                          bias=False), nn.BatchNorm2d(cout))

        self.stem = nn.Sequential(conv_bn(3, width, 3, 2), nn.ReLU())
        self.conv1 = nn.Sequential(conv_bn(width, width, 3), nn.ReLU())
        self.conv2 = conv_bn(width, width, 3)
        self.relu = nn.ReLU()
        self.dw = nn.Sequential(
            conv_bn(width, width, 3, 2, groups=width), nn.ReLU6())
        self.pw = nn.Sequential(conv_bn(width, 2 * width, 1), nn.ReLU6())
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.head = nn.Linear(2 * width, 10)

    def forward(self, inputs, data_samples=None, mode='tensor'):
        x = self.stem(inputs)
        x = self.relu(x + self.conv2(self.conv1(x)))
        x = self.pw(self.dw(x))
        return self.head(self.pool(x).flatten(1))


@pytest.fixture(scope='module')
def cnn(digits):
    """SmallNet after 60 Adam steps on digits (~70 % top-1), LiteRT W8A8
    PTQ, biases on the int32 grid."""
    torch.manual_seed(0)
    model = SmallNet()
    optim = torch.optim.Adam(model.parameters(), lr=1e-2)
    for step in range(60):
        batch = slice(32 * step % 960, 32 * step % 960 + 32)
        loss = F.cross_entropy(model(digits[0][batch]), digits[1][batch])
        optim.zero_grad()
        loss.backward()
        optim.step()
    qmodel = quantize_w8a8(model.eval(), 'litert', (3, 28, 28),
                           ('tensor', ))
    calibrate_and_freeze(qmodel, digits[0][:128].split(64))
    build_exporter('litert').prepare_model(qmodel)
    return qmodel


class TinyViT(AttentionBlockNet):
    """The demo ViT's ops at width 16: patch embedding, class token, position
    embedding, the pre-norm block of :class:`AttentionBlockNet` without a
    score bias (``Q @ K^T * scale``, softmax, ``attn @ V``, GELU MLP,
    residual adds), head on the class token."""

    def __init__(self, dims: int = 16, heads: int = 2) -> None:
        super().__init__(dims, heads, num_classes=10)
        self.patch_embed = nn.Conv2d(3, dims, 7, stride=7)
        self.cls_token = nn.Parameter(0.5 * torch.randn(1, 1, dims))
        self.pos_embed = nn.Parameter(0.5 * torch.randn(1, 17, dims))

    def attention(self, x):
        b, n, c = x.shape
        qkv = self.qkv(self.norm1(x)).reshape(b, n, 3, self.heads, -1)
        qkv = qkv.permute(2, 0, 3, 1, 4)
        q, k, v = qkv[0], qkv[1], qkv[2]
        attn = (q @ k.transpose(-2, -1)) * self.scale
        out = (attn.softmax(dim=-1) @ v).transpose(1, 2).reshape(b, n, c)
        return self.proj(out)

    def forward(self, inputs, data_samples=None, mode='tensor'):
        x = self.patch_embed(inputs).flatten(2).transpose(1, 2)
        x = torch.cat((self.cls_token.expand(x.shape[0], -1, -1), x), 1)
        x = x + self.pos_embed
        x = x + self.attention(x)
        x = x + self.fc2(self.act(self.fc1(self.norm2(x))))
        return self.head(x[:, 0])


@pytest.fixture(scope='module')
def vit(digits):
    torch.manual_seed(0)
    qmodel = quantize_w8a8(TinyViT(), 'litert', (3, 28, 28), ('tensor', ))
    calibrate_and_freeze(qmodel, digits[0][:128].split(64))
    build_exporter('litert').prepare_model(qmodel)
    return qmodel


def _tflite_tensors(path):
    """``{name: (scales, zero_points)}`` of every quantized tensor of the
    file, read by LiteRT's interpreter."""
    interpreter = litert.Interpreter(model_path=path)
    return {
        d['name']: (d['quantization_parameters']['scales'],
                    d['quantization_parameters']['zero_points'])
        for d in interpreter.get_tensor_details()
        if d['quantization_parameters']['scales'].size
    }


def _fake_quants(model):
    return [m for m in model.modules() if isinstance(m, QDQFakeQuantize)]


def test_tflite_carries_the_checkpoint_qparams(cnn, digits, tmp_path):
    result = export_model(cnn, digits[2][:2], str(tmp_path / 'r.onnx'),
                          'litert')
    assert sorted(result.files) == ['onnx', 'qparams', 'tflite']
    tensors = _tflite_tensors(result.files['tflite'])
    deployed = result.deploy_model
    activations = [fq for fq in _fake_quants(deployed)
                   if not fq.is_per_channel]
    assert len(activations) == 8  # input, 5 convs, the pooling, head
    for fq in activations:  # bit for bit, by the fake quant's name
        # (the model input keeps the ONNX input's name)
        scales, zero_points = tensors['input' if fq.name == 'inputs' else
                                      fq.name]
        assert scales.astype(np.float32).tobytes() == \
            fq.scale.reshape(-1).numpy().tobytes(), fq.name
        assert zero_points.tolist() == fq.zero_point.reshape(-1).tolist()
    weight_scales = {s.astype(np.float32).tobytes()
                     for s, _ in tensors.values() if s.size > 1}
    layers = [m for m in deployed.modules()
              if isinstance(m, WeightQuantizedLayer)]
    assert len(layers) == 6  # 5 convs and the head
    for layer in layers:
        fq = layer.weight_fake_quant
        assert fq.scale.numpy().tobytes() in weight_scales
        assert fq.quant_min == -127 and not fq.zero_point.any()


def test_perturbed_scale_moves_the_runtime_as_the_simulation(
        cnn, digits, tmp_path):
    """One activation scale in the middle of the network cut to a quarter
    (its tensor now clips): the interpreter's outputs move as the
    simulation's do, so the file runs on the model's scale."""
    x = digits[2][:48]
    runs = []
    for factor in (1.0, 0.25):
        model = copy.deepcopy(cnn)
        fake_quants = list(model.architecture.act_fake_quants.values())
        fake_quants[len(fake_quants) // 2].scale.data *= factor
        build_exporter('litert').prepare_model(model)  # the int32 biases
        path = str(tmp_path / f'x{factor}.onnx')
        result = export_model(model, x[:2], path, 'litert')
        with torch.no_grad():
            sim = result.deploy_model(x).numpy()
        runs.append((sim, load_runtime('litert', path)(x.numpy())))
    (sim0, rt0), (sim1, rt1) = runs
    sim_move, rt_move = sim1 - sim0, rt1 - rt0
    step = output_step(result.deploy_model)
    assert np.abs(sim_move).max() > 5 * step  # the scale matters
    # the runtime moved by what the simulation says
    assert sqnr_db(sim_move, rt_move) > 30


def test_parity(cnn, digits, tmp_path):
    """CONV_2D, DEPTHWISE_CONV_2D with fused ReLU/ReLU6, ADD with a fused
    ReLU, MEAN, FULLY_CONNECTED against the simulation on 300 test
    digits."""
    result = export_model(cnn, digits[2][:2], str(tmp_path / 'm.onnx'),
                          'litert')
    report = check_parity(result.deploy_model, result.onnx_path,
                          digits[2][:300], 'litert', labels=digits[3][:300])
    assert report.sim_accuracy > 0.6, report  # a trained model
    assert report.agreement >= 0.99, report
    assert report.sqnr_db >= 35, report
    assert abs(report.sim_accuracy - report.runtime_accuracy) <= 0.01
    ops = _op_codes(result.files['tflite'])
    for op in ('CONV_2D', 'DEPTHWISE_CONV_2D', 'ADD', 'MEAN',
               'FULLY_CONNECTED'):
        assert op in ops


def _op_codes(path):
    """The builtin op names of a ``.tflite``, in order."""
    import tflite
    from tflite.BuiltinOperator import BuiltinOperator
    names = {v: k for k, v in vars(BuiltinOperator).items()
             if not k.startswith('_')}
    with open(path, 'rb') as f:
        model = tflite.Model.GetRootAsModel(f.read(), 0)
    graph = model.Subgraphs(0)
    codes = [model.OperatorCodes(i).BuiltinCode()
             for i in range(model.OperatorCodesLength())]
    return [names[codes[graph.Operators(i).OpcodeIndex()]]
            for i in range(graph.OperatorsLength())]


def _int8_matmuls(gm):
    return sum(n.target is tflite_int8_matmul for n in gm.graph.nodes)


def test_vit_softmax_on_the_fixed_grid_and_parity(vit, digits, tmp_path):
    softmax = [m for name, m in vit.named_modules()
               if name.endswith('softmax')]
    assert len(softmax) == 1 and isinstance(softmax[0], FixedFakeQuantize)
    scale, zero_point = softmax[0].get_qparams()
    assert (float(scale), int(zero_point)) == SOFTMAX_QPARAMS  # calibrated
    result = export_model(vit, digits[2][:2], str(tmp_path / 'v.onnx'),
                          'litert')
    tensors = _tflite_tensors(result.files['tflite'])
    scales, zero_points = tensors[softmax[0].name]
    assert scales.tolist() == [1 / 256] and zero_points.tolist() == [-128]
    # the position embedding is an int8 operand with its own fake quant
    assert 'pos_embed' in tensors
    # both attention matmuls simulate LiteRT's int8 BATCH_MATMUL
    assert _int8_matmuls(result.deploy_model) == 2
    report = check_parity(result.deploy_model, result.onnx_path,
                          digits[2][:64], 'litert')
    assert report.agreement >= 0.95, report
    assert report.sqnr_db >= 50, report


def test_attention_matmuls_in_float_on_request(vit, digits, tmp_path):
    """``float_ops`` with ``MatMul``: both attention matmuls run in float32
    between DEQUANTIZE and QUANTIZE, every other op as before."""
    result = export_model(vit, digits[2][:2], str(tmp_path / 'v.onnx'),
                          'litert', float_ops=('LayerNormalization',
                                               'MatMul'))
    ops = _op_codes(result.files['tflite'])
    assert ops.count('BATCH_MATMUL') == 2
    # the two LayerNorms' and the two matmuls' (two inputs each)
    assert ops.count('DEQUANTIZE') == 2 + 2 * 2
    assert 'FULLY_CONNECTED' in ops and 'SOFTMAX' in ops
    # the simulation multiplies in float too (the model itself is kept)
    assert _int8_matmuls(result.deploy_model) == 0
    assert _int8_matmuls(tensor_graph_module(vit)) == 2
    report = check_parity(result.deploy_model, result.onnx_path,
                          digits[2][:64], 'litert')
    assert report.sqnr_db >= 30, report


def test_float_ops_from_the_deploy_config():
    from mmrazor_quant.structures import DeployConfig
    cfg = DeployConfig.from_dict(dict(backend_config=dict(
        type='litert', float_ops=['LayerNormalization', 'MatMul'])))
    assert cfg.backend_settings == dict(exporter_options=dict(
        float_ops=('LayerNormalization', 'MatMul')))
    with pytest.raises(ValueError, match='float_ops must be a list'):
        DeployConfig.from_dict(dict(backend_config=dict(
            type='litert', float_ops='MatMul')))


def _no_files(directory):
    return [f for f in os.listdir(directory)]


def test_layernorm_refused_when_float_ops_are_not_allowed(
        vit, digits, tmp_path):
    with pytest.raises(UnsupportedOpError,
                       match=r"LayerNormalization .*layer 'norm1'.*no int8 "
                       'LayerNorm kernel'):
        export_model(vit, digits[2][:2], str(tmp_path / 'v.onnx'), 'litert',
                     float_ops=())
    assert _no_files(tmp_path) == []


class SineNet(BaseModel):
    """A conv followed by an op TFLite has no int8 kernel for."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3)
        self.head = nn.Linear(4, 10)

    def forward(self, inputs, data_samples=None, mode='tensor'):
        x = torch.sin(self.conv(inputs)).mean((2, 3))
        return self.head(x)


def test_op_without_int8_kernel_is_named_with_its_layer(digits, tmp_path):
    qmodel = calibrate_and_freeze(
        quantize_w8a8(SineNet(), 'litert', (3, 28, 28), ('tensor', )),
        [digits[0][:32]])
    with pytest.raises(UnsupportedOpError,
                       match=r"LiteRT cannot run Sin \(node .*, layer "
                       r"'head'\) in int8"):
        export_model(qmodel, digits[2][:2], str(tmp_path / 's.onnx'),
                     'litert')
    assert _no_files(tmp_path) == []


def test_model_quantized_for_another_backend_is_refused(digits, tmp_path):
    torch.manual_seed(0)
    qmodel = calibrate_and_freeze(
        quantize_w8a8(SmallNet(), 'openvino', (3, 28, 28), ('tensor', )),
        [digits[0][:32]])
    with pytest.raises(ValueError,
                       match=r"OpenVINOQuantizer \(backend 'openvino'\).*"
                       'LiteRTQuantizer'):
        export_model(qmodel, digits[2][:2], str(tmp_path / 'o.onnx'),
                     'litert')
    assert _no_files(tmp_path) == []


def test_missing_runtime(cnn, digits, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, 'ai_edge_litert', None)
    with pytest.raises(ImportError, match='make litert'):
        export_model(cnn, digits[2][:2], str(tmp_path / 'r.onnx'),
                     'litert')
    assert _no_files(tmp_path) == []
