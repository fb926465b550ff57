"""The mmdet adapter's rewrites of detection transformers (DETR): the
padding masks and positional encodings of the rewritten ``pre_transformer``
against mmdet's own, and the written-out attention against torch's."""
import types

import pytest
import torch

pytest.importorskip('mmdet')

from mmdet.models.detectors.detr import DETR  # noqa: E402
from mmdet.models.layers import SinePositionalEncoding  # noqa: E402
from mmdet.structures import DetDataSample  # noqa: E402

from mmrazor_quant.models.codebases.mmdet_detr import (  # noqa: E402
    detr_pre_transformer,
    padding_masks,
)
from mmrazor_quant.models.codebases.mmseg_rewrites import (  # noqa: E402
    written_out_attention,
)


def _detector(num_feats: int = 8):
    # what ``pre_transformer`` reads of a DETR: its positional encoding
    return types.SimpleNamespace(positional_encoding=SinePositionalEncoding(
        num_feats=num_feats, normalize=True))


def _samples(batch_hw, img_hws):
    return [
        DetDataSample(metainfo=dict(batch_input_shape=batch_hw,
                                    img_shape=hw)) for hw in img_hws
    ]


def test_unpadded_batch_without_samples_is_mmdets_unpadded_batch():
    """Tensor mode (no samples) gives mmdet's masks (all False) and
    positional encodings of a batch whose images fill it, to the float
    tolerance."""
    torch.manual_seed(0)
    detector = _detector()
    feats = (torch.randn(2, 16, 4, 5), )
    ours = detr_pre_transformer(detector, feats, None)
    theirs = DETR.pre_transformer(detector, feats,
                                  _samples((32, 40), [(32, 40)] * 2))
    for ours_dict, theirs_dict in zip(ours, theirs):
        assert ours_dict.keys() == theirs_dict.keys()
        for key in ours_dict:
            torch.testing.assert_close(ours_dict[key], theirs_dict[key],
                                       rtol=0, atol=1e-6)
    assert not ours[0]['feat_mask'].any()
    assert ours[0]['feat_pos'].shape == (2, 20, 16)


def test_padded_batch_keeps_mmdets_masks():
    """With samples (predict, loss), an image smaller than the batch masks
    its padding as mmdet does (nearest-resized to the feature map)."""
    torch.manual_seed(0)
    detector = _detector()
    feats = (torch.randn(2, 16, 4, 5), )
    samples = _samples((32, 40), [(32, 40), (16, 24)])
    ours = detr_pre_transformer(detector, feats, samples)
    theirs = DETR.pre_transformer(detector, feats, samples)
    for key in ('feat', 'feat_mask', 'feat_pos'):
        torch.testing.assert_close(ours[0][key], theirs[0][key], rtol=0,
                                   atol=1e-6)
    mask = padding_masks(feats[0], samples)
    # 16 of 32 rows, 24 of 40 columns: 2 of 4 feature rows, 3 of 5 columns
    assert mask[1].tolist() == [[False] * 3 + [True] * 2] * 2 + \
        [[True] * 5] * 2
    assert not mask[0].any()


@pytest.mark.parametrize('with_mask', [False, True])
def test_written_out_attention_is_torchs(with_mask):
    """Query, keys and values apart, with a key padding mask: the same
    numbers as ``nn.MultiheadAttention`` (batch first)."""
    torch.manual_seed(0)
    mha = torch.nn.MultiheadAttention(16, 4, batch_first=True).eval()
    query, key, value = (torch.randn(2, n, 16) for n in (3, 6, 6))
    mask = torch.zeros(2, 6, dtype=torch.bool)
    if with_mask:
        mask[1, 4:] = True
    expected = mha(query, key, value, key_padding_mask=mask)[0]
    got = written_out_attention(mha, query, key, value,
                                key_padding_mask=mask)
    torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-6)


@pytest.mark.slow
def test_traced_detr_unquantized_is_mmdets_on_an_unpadded_batch():
    """mmdet's own DETR config traced with the adapter's rewrites, fake
    quants off: tensor mode (no samples) gives mmdet's outputs for samples
    whose images fill the batch, and predict the same boxes."""
    import copy

    from mmrazor_quant.analysis import zoo_check
    from mmrazor_quant.analysis.model_check import w8a8_model_cfg
    from mmrazor_quant.models.codebases.mmdet import image_metainfo
    from mmrazor_quant.models.fake_quants.utils import disable_fake_quant
    from mmrazor_quant.registry import MODELS
    cfg = zoo_check.zoo_config('mmdet::detr/detr_r18_8xb2-500e_coco.py')
    architecture = zoo_check._build_architecture(cfg, 0).eval()
    float_model = copy.deepcopy(architecture)
    model_cfg = w8a8_model_cfg(architecture, 'openvino')
    model_cfg['input_shape'] = (3, 64, 64)
    model = MODELS.build(model_cfg).eval()
    disable_fake_quant(model)
    x = torch.randn(2, 3, 64, 64)
    samples = [DetDataSample(metainfo=image_metainfo(64, 64))
               for _ in range(2)]
    with torch.no_grad():
        want = float_model._forward(x, copy.deepcopy(samples))
        got = model(x, mode='tensor')
        want_pred = float_model.predict(x, copy.deepcopy(samples))
        pred = model(x, copy.deepcopy(samples), mode='predict')
    for g, w in zip(got, want):
        torch.testing.assert_close(g, w, rtol=1e-4, atol=1e-5)
    for p, w in zip(pred, want_pred):
        assert torch.equal(p.pred_instances.labels, w.pred_instances.labels)
        torch.testing.assert_close(p.pred_instances.scores,
                                   w.pred_instances.scores, rtol=1e-4,
                                   atol=1e-5)
        # a corner is the centre minus half the size, in pixels: 1e-4 of
        # both at 64 px (the attention's matmuls add in another order than
        # torch's fused kernel) is ~0.01 px
        torch.testing.assert_close(p.pred_instances.bboxes,
                                   w.pred_instances.bboxes, rtol=0,
                                   atol=0.05)
