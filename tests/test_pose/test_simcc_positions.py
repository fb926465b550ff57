"""Fake-quant positions in RTMPose's SimCC head (RTMCCHead), derived by
hand from the rule table of docs/backends.md."""
import pytest

from ..test_models.test_quantizers.test_positions import fake_quant_consumers

# The head: final 7x7 conv -> flatten -> ScaleNorm (x / norm * g) -> Linear
# (mlp.1) -> GAU block [ScaleNorm -> uv Linear -> SiLU -> split u | v | base;
# q, k = base * gamma + beta; kernel = relu(q @ k^T / sqrt(s))^2;
# o(u * (kernel @ v)); + res_scale(shortcut)] -> cls_x, cls_y Linears.
# Both backends quantize every conv/linear data input once (shared by
# cls_x and cls_y) and both inputs of both bmm's; no SimCC output is
# quantized.
# OpenVINO (cnn placement) also quantizes both inputs of every element-wise
# mul of two activations (u, kernel @ v, SiLU's base, the gamma slice, the
# shortcut into res_scale) and the add's input that is not the linear (o)
# output it is fused into; a mul or add by a parameter (ScaleNorm's
# ``* g``, ``* gamma + beta``, the Scale layers) is a scale-shift post-op
# and quantizes nothing.
OPENVINO = {
    'backbone_stage4_2_final_conv_activate': ['head_final_layer'],
    'head_mlp_0_mul_1': ['head_mlp_1'],
    'head_gau_ln_mul_1': ['head_gau_uv'],
    'head_gau_getitem': ['mul_9'],
    'head_gau_getitem_1': ['bmm_1'],
    'head_gau_getitem_2': ['unsqueeze'],
    'head_gau_getitem_3': ['mul_8'],
    'head_gau_getitem_4': ['bmm'],
    'head_gau_getitem_5': ['permute'],
    'head_gau_square': ['bmm_1'],
    'head_gau_bmm_1': ['mul_9'],
    'head_gau_mul_1': ['head_gau_o'],
    'head_gau_res_scale_mul': ['add_4'],
    'head_gau_add_1': ['head_cls_x', 'head_cls_y'],
}
# TensorRT quantizes no element-wise mul; k after its permute (agnostic);
# of each add the inputs that are no conv/linear output (o reaches add_4
# through the drop-path Identity, so both of its inputs).
TENSORRT = {
    'backbone_stage4_2_final_conv_activate': ['head_final_layer'],
    'head_mlp_0_mul_1': ['head_mlp_1'],
    'head_gau_ln_mul_1': ['head_gau_uv'],
    'head_gau_getitem_1': ['bmm_1'],
    'head_gau_mul': ['add_3'],
    'head_gau_getitem_4': ['bmm'],
    'head_gau_permute': ['bmm'],
    'head_gau_square': ['bmm_1'],
    'head_gau_mul_1': ['head_gau_o'],
    'head_gau_drop_path': ['add_4'],
    'head_gau_res_scale_mul': ['add_4'],
    'head_gau_add_1': ['head_cls_x', 'head_cls_y'],
}
HEAD_WEIGHTS = {'final_layer', 'mlp.1', 'gau.uv', 'gau.o', 'cls_x', 'cls_y'}


@pytest.mark.parametrize('backend,expected', [('openvino', OPENVINO),
                                              ('tensorrt', TENSORRT)])
def test_simcc_head_positions_follow_rule_table(backend, expected,
                                                calibrated):
    model = calibrated('rtmpose', backend)
    table = fake_quant_consumers(model.qmodels['tensor'].graph)
    head = {k: v for k, v in table.items()
            if k.startswith('head_') or any('head_' in c for c in v)}
    assert head == expected
    weighted = {
        name
        for name, m in model.architecture.head.named_modules()
        if hasattr(m, 'weight_fake_quant')
    }
    assert weighted == HEAD_WEIGHTS
    # the same fake quants in every mode: loss and predict reuse them
    for mode in ('predict', 'loss'):
        assert {k: v for k, v in fake_quant_consumers(
            model.qmodels[mode].graph).items() if k in head}.keys() == \
            head.keys()
