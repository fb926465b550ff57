"""The demo's MNIST ViT (configs/fp32/vit_mnist.py) under its OpenVINO PTQ
config: NNCF's transformer placement on mmcls's VisionTransformer, and a
W8A8 simulation close to the float model."""
import torch
from mmengine.config import Config
from mmengine.registry import init_default_scope

from mmrazor_quant.models.fake_quants import (
    disable_fake_quant,
    disable_observer,
    enable_fake_quant,
    named_fake_quants,
)
from mmrazor_quant.registry import MODELS, register_all_modules

CONFIG = 'configs/quantization/ptq/ptq_openvino_vit_mnist.py'
#: Per encoder layer, the inputs OpenVINO runs in int8 with NNCF's
#: transformer placement: qkv linear (LayerNorm 1 output), Q and K^T of the
#: score matmul (one fake quant on the permuted qkv tensor before the
#: split), the output projection (attn @ V's output, before the transpose
#: and reshape), fc1 (LayerNorm 2 output) and fc2 (GELU output, before the
#: dropout). attn @ V, softmax, the residual adds and LayerNorm stay float.
PER_LAYER = ('ln1', 'attn_permute', 'attn_matmul_1', 'ln2',
             'ffn_layers_0_1')


def _build():
    register_all_modules(init_default_scope=False)
    init_default_scope('mmcls')
    cfg = Config.fromfile(CONFIG)
    cfg.model.float_checkpoint = None
    torch.manual_seed(0)
    return MODELS.build(cfg.model).eval()


def test_transformer_placement_on_the_demo_vit():
    model = _build()
    names = [n for n, _ in named_fake_quants(model)]
    weights = [n for n in names if n.endswith('weight_fake_quant')]
    acts = sorted(n.split('act_fake_quants.')[1] for n in names
                  if 'act_fake_quants' in n)
    # patch conv, 4 linears per layer, the head
    assert len(weights) == 1 + 4 * 4 + 1
    expected = ['inputs', 'backbone_getitem_5'] + [
        f'backbone_layers_{i}_{p}' for i in range(4) for p in PER_LAYER]
    assert acts == sorted(expected)


def test_ptq_simulation_tracks_the_float_vit():
    model = _build()
    gen = torch.Generator().manual_seed(0)
    batches = [torch.randn(16, 1, 28, 28, generator=gen) for _ in range(3)]
    with torch.no_grad():
        for x in batches[:2]:  # calibrate: observers on
            model(x, mode='tensor')
        disable_observer(model)
        quantized = model(batches[2], mode='tensor')
        disable_fake_quant(model)
        float_out = model(batches[2], mode='tensor')
        enable_fake_quant(model)
    noise = (quantized - float_out).pow(2).sum()
    sqnr = 10 * torch.log10(float_out.pow(2).sum() / noise)
    assert sqnr > 25, f'{float(sqnr):.1f} dB'  # measured 32.3 dB
