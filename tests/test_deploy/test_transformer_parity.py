"""Transformers export to QDQ ONNX and run with parity (issue 13).

A small vision transformer built around the hand-written attention block
of the position tests (with Swin's shifted-window moves: ``torch.roll`` and
a window partition/reverse whose batch size is ``int()`` of a size
quotient), and mmcls's own DeiT-tiny, exported at batch 2 and run at other
batch sizes in onnxruntime and OpenVINO.
"""
import pytest
import torch
import torch.nn.functional as F
from mmengine.model import BaseModel
from torch import nn

from mmrazor_quant.analysis.model_check import (
    build_architecture,
    calibrate_and_freeze,
    quantize_w8a8,
)
from mmrazor_quant.deploy import check_parity, export_model
from ..int8_host import int8_weight_bits
from ..test_models.test_quantizers.toy_models import AttentionBlockNet


class WindowViT(BaseModel):
    """Patch embedding, a shifted window partition and its reverse, the
    attention block and its linear head."""

    def __init__(self, dims: int = 16, window: int = 4) -> None:
        super().__init__()
        self.window = window
        self.patch_embed = nn.Conv2d(3, dims, 4, stride=4)
        self.block = AttentionBlockNet(dims=dims, heads=2, num_classes=10)

    def forward(self, inputs, data_samples=None, mode='tensor'):
        x = self.patch_embed(inputs).flatten(2).transpose(1, 2)  # B, N, C
        x = torch.roll(x, shifts=1, dims=1)
        windows = x.reshape(-1, self.window, x.shape[2])  # B * N / w
        # Swin's window_reverse: the batch size as int() of a quotient
        batch = int(windows.shape[0] / (x.shape[1] / self.window))
        x = windows.view(batch, -1, windows.shape[2])
        logits = self.block(torch.roll(x, shifts=-1, dims=1))
        if mode == 'loss':
            return dict(loss=F.cross_entropy(logits, data_samples))
        return logits


@pytest.mark.parametrize('backend,kwargs,runtimes', [
    ('openvino', {}, dict(onnxruntime={}, openvino={})),
    ('openvino', dict(model_type='transformer'),
     dict(onnxruntime={}, openvino={})),
    # onnxruntime stands in for TensorRT, which this machine does not have:
    # float ops on dequantized values, TensorRT's arithmetic
    ('tensorrt', {}, dict(onnxruntime=dict(qdq_fusion=False))),
])
def test_window_vit_parity(backend, kwargs, runtimes, tmp_path):
    torch.manual_seed(0)
    weight_bits = int8_weight_bits() if backend == 'openvino' else 8
    qmodel = quantize_w8a8(WindowViT(), backend, (3, 16, 16), ('tensor', ),
                           weight_bits, **kwargs)
    images = torch.randn(96, 3, 16, 16)
    calibrate_and_freeze(qmodel, images[:64].split(32))
    # exported at batch 2, run at batch 8: the int() batch of the window
    # reverse must stay symbolic in the ONNX graph
    result = export_model(qmodel, images[:2], str(tmp_path / 'vit.onnx'),
                          'openvino' if backend == 'openvino' else
                          'onnxruntime')
    for runtime, options in runtimes.items():
        report = check_parity(result.deploy_model, result.onnx_path,
                              images[64:], runtime=runtime, batch_size=8,
                              **options)
        assert report.num_samples == 32
        assert report.agreement >= 0.9, (runtime, report)
        assert report.sqnr_db >= 30, (runtime, report)


@pytest.mark.parametrize('kwargs,runtimes,min_sqnr', [
    # NNCF's transformer placement: both runtimes follow the simulation
    (dict(model_type='transformer'), ('onnxruntime', 'openvino'), 32),
    # the CNN placement (residual adds and attn @ V in int8): onnxruntime
    # follows it; OpenVINO does not (19.5 dB at 24.9 dB nudge baseline, see
    # docs/model_zoo.md), so it is not asserted here
    ({}, ('onnxruntime', ), 25),
])
def test_deit_tiny_parity(kwargs, runtimes, min_sqnr, tmp_path):
    torch.manual_seed(0)
    deit = build_architecture('mmcls::deit/deit-tiny_pt-4xb256_in1k.py',
                              dict(backbone=dict(img_size=32)))
    images = torch.randn(48, 3, 32, 32)
    qmodel = calibrate_and_freeze(
        quantize_w8a8(deit, 'openvino', (3, 32, 32), ('tensor', ),
                      int8_weight_bits(), **kwargs),
        [images[:32]])
    result = export_model(qmodel, images[:2], str(tmp_path / 'deit.onnx'),
                          'openvino')
    for runtime in runtimes:
        report = check_parity(result.deploy_model, result.onnx_path,
                              images[32:], runtime=runtime, batch_size=8)
        # random weights: near-tied logits make top-1 flip on one step
        assert report.agreement >= 0.8, (runtime, report)
        assert report.sqnr_db >= min_sqnr, (runtime, report)
