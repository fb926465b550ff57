"""Fake-quant positions of one SegFormer encoder layer (efficient
self-attention with spatial reduction, Mix-FFN), read by hand from the rule
table of docs/backends.md."""
import pytest

from mmrazor_quant.registry import MODELS
from ..test_models.test_quantizers.test_positions import fake_quant_consumers
from .toy_segmentors import quant_cfg, segformer_cfg

# The first stage of the tiny MiT: patch embedding (conv 7x7 + LayerNorm),
# then one TransformerEncoderLayer:
#   x = x + attn(norm1(x))     attn: SR conv (stride 2) + LN on the keys and
#                               values, torch's nn.MultiheadAttention, drop
#   x = x + ffn(norm2(x))      Mix-FFN: conv 1x1, depthwise conv 3x3 (the
#                               positional encoding), GELU, conv 1x1, drop
# torch's nn.MultiheadAttention is written out by the mmseg adapter's trace
# rewrite: q, k, v = F.linear(in_proj_weight slices) (float: not a module),
# softmax(q * d^-0.5 @ k^T) @ v, then the out_proj linear.
L = 'backbone_layers_0_1_0_'
COMMON = {
    # the image: quantized for the patch embedding's conv
    'inputs': ['backbone_layers_0_0_projection'],
    # the residual add: its identity input (the patch embedding's LayerNorm,
    # not a conv/linear output) is quantized, and so is the attention
    # branch (out_proj behind dropouts, not fused into the add)
    'backbone_layers_0_0_norm': ['add'],
    L + 'attn_dropout_layer': ['add'],
    # second residual add: the first add's output and the Mix-FFN output
    # (behind DropPath, so not a conv output the add fuses into)
    L + 'attn_add': ['add_1'],
    L + 'ffn_dropout_layer': ['add_1'],
    # depthwise 3x3 conv input: the first 1x1 conv's output
    L + 'ffn_layers_0': [L + 'ffn_layers_1'],
}
EXPECTED = {
    # OpenVINO quantizes the input of a reshape whose consumer (a conv)
    # quantizes: the SR conv's and the first Mix-FFN conv's inputs sit on the
    # transpose before nlc_to_nchw's reshape; GELU runs in float and the
    # second 1x1 conv quantizes its output (before the dropout, a shape op).
    # Both matmuls quantize both inputs (cnn placement): the scaled q, k
    # and v (after the head split, before the transposes), the softmax
    # output; the out_proj linear quantizes
    # attn @ V before the merge of the heads.
    'openvino': dict(COMMON, **{
        L + 'attn_transpose': ['reshape'],
        L + 'attn_reshape_2': ['transpose_4'],
        L + 'attn_reshape_3': ['transpose_5'],
        L + 'attn_mul_1': ['matmul'],
        L + 'attn_softmax': ['matmul_1'],
        L + 'attn_transpose_6': ['reshape_4'],
        L + 'ffn_transpose': ['reshape_5'],
        L + 'ffn_activate': [L + 'ffn_layers_3'],
    }),
    # TensorRT: reshapes are agnostic, each conv quantizes its own input
    # (after the reshape; after the GELU's dropout for the second conv).
    # Same quantized tensors, each right before its consumer (after the
    # head split, the transpose of k, the merge of the heads).
    'tensorrt': dict(COMMON, **{
        L + 'attn_reshape': [L + 'attn_sr'],
        L + 'attn_mul_1': ['matmul'],
        L + 'attn_transpose_5': ['matmul'],
        L + 'attn_softmax': ['matmul_1'],
        L + 'attn_transpose_4': ['matmul_1'],
        L + 'attn_reshape_4': [L + 'attn_attn_out_proj'],
        L + 'ffn_reshape': [L + 'ffn_layers_0'],
        L + 'ffn_layers_3': [L + 'ffn_layers_4'],
    }),
}
# convs swapped for QAT convs that quantize their weights; the attention's
# weights stay float: q/k/v are functional on the packed weight, and
# out_proj is torch's NonDynamicallyQuantizableLinear, which no QAT module
# replaces (its input is quantized as a linear's)
WEIGHTED = {
    'backbone.layers.0.0.projection', 'backbone.layers.0.1.0.attn.sr',
    'backbone.layers.0.1.0.ffn.layers.0', 'backbone.layers.0.1.0.ffn.layers.1',
    'backbone.layers.0.1.0.ffn.layers.4'
}


@pytest.mark.parametrize('backend', ['openvino', 'tensorrt'])
def test_first_encoder_layer_positions(backend):
    model = MODELS.build(quant_cfg(segformer_cfg(), backend, 32))
    for mode, gm in model.qmodels.items():
        table = fake_quant_consumers(gm.graph)
        first = {k: v for k, v in table.items()
                 if k == 'inputs' or k.startswith(('backbone_layers_0_',
                                                   L))}
        assert first == {k: sorted(v)
                         for k, v in EXPECTED[backend].items()}, mode
    weighted = {
        name for name, m in model.architecture.named_modules()
        if name.startswith('backbone.layers.0.')
        and hasattr(m, 'weight_fake_quant')
    }
    assert weighted == WEIGHTED
