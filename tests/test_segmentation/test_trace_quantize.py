"""mmseg segmentors traced and quantized in tensor, predict and loss modes,
and one QAT step."""
import pytest
import torch

from mmrazor_quant.models.codebases import codebase_of
from mmrazor_quant.registry import MODELS
from .conftest import seg_batch
from .toy_segmentors import NUM_CLASSES, fastscnn_cfg, quant_cfg, segformer_cfg

MODELS_AT = {'fastscnn': (fastscnn_cfg, 64, 8), 'segformer': (segformer_cfg,
                                                              32, 4)}


@pytest.mark.parametrize('name', list(MODELS_AT))
@pytest.mark.parametrize('backend', ['openvino', 'tensorrt'])
def test_three_modes_trace_and_run(name, backend):
    make, size, stride = MODELS_AT[name]
    torch.manual_seed(0)
    model = MODELS.build(quant_cfg(make(), backend, size))
    assert set(model.qmodels) == {'tensor', 'predict', 'loss'}
    data = model.data_preprocessor(seg_batch(size), True)
    logits = model(data['inputs'], mode='tensor')
    assert logits.shape == (2, NUM_CLASSES, size // stride, size // stride)
    preds = model(data['inputs'], data['data_samples'], mode='predict')
    assert preds[0].pred_sem_seg.data.shape == (1, size, size)
    # predict = the float model's post-processing of the tensor graph
    assert torch.equal(
        preds[0].seg_logits.data.argmax(0, keepdim=True),
        preds[0].pred_sem_seg.data)
    losses = model(data['inputs'], data['data_samples'], mode='loss')
    assert 'decode.loss_ce' in losses
    assert ('aux_0.loss_ce' in losses) == (name == 'fastscnn')
    assert all(torch.isfinite(v) for k, v in losses.items() if 'loss' in k)


def test_predict_without_data_samples_sizes_from_the_batch():
    model = MODELS.build(quant_cfg(segformer_cfg(), 'openvino', 32)).eval()
    preds = model(torch.rand(1, 3, 32, 32), None, mode='predict')
    assert preds[0].pred_sem_seg.data.shape == (1, 32, 32)


def test_predict_and_tensor_graphs_match_the_float_model_unquantized():
    from mmrazor_quant.models.fake_quants.utils import disable_fake_quant
    torch.manual_seed(0)
    float_model = MODELS.build(segformer_cfg()).eval()
    model = MODELS.build(quant_cfg(segformer_cfg(), 'openvino', 32)).eval()
    model.architecture.load_state_dict(float_model.state_dict(),
                                       strict=False)
    disable_fake_quant(model)
    x = torch.rand(2, 3, 32, 32)
    with torch.no_grad():
        want = float_model(x, mode='tensor')
        got = model(x, mode='tensor')
        pred = model(x, None, mode='predict')
    torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-5)
    want_pred = float_model.predict(x)
    assert torch.equal(pred[1].pred_sem_seg.data,
                       want_pred[1].pred_sem_seg.data)


@pytest.mark.parametrize('name', list(MODELS_AT))
def test_one_lsq_training_step(name):
    make, size, _ = MODELS_AT[name]
    torch.manual_seed(0)
    model = MODELS.build(quant_cfg(make(), 'openvino', size, lsq=True))
    data = model.data_preprocessor(seg_batch(size), True)
    with torch.no_grad():  # LSQ's first batch sets the scales
        model(data['inputs'], data['data_samples'], mode='loss')
    params = [p for p in model.parameters() if p.requires_grad]
    before = [p.detach().clone() for p in params]
    optim = torch.optim.SGD(params, lr=1e-2)
    losses = model(data['inputs'], data['data_samples'], mode='loss')
    loss = sum(v for k, v in losses.items() if 'loss' in k)
    loss.backward()
    scales = [m.scale for m in model.modules()
              if type(m).__name__ == 'LearnableFakeQuantize']
    assert scales and all(s.grad is not None for s in scales)
    optim.step()
    changed = sum(not torch.equal(a, p) for a, p in zip(before, params))
    assert changed > len(params) // 2


def test_dummy_data_samples_train_the_loss_mode():
    model = MODELS.build(quant_cfg(segformer_cfg(), 'openvino', 32))
    x = torch.rand(2, 3, 32, 32)
    adapter = codebase_of(model.architecture)
    assert adapter.task == 'segmentation'
    samples = adapter.dummy_data_samples(x, model(x, mode='tensor'))
    # stripes labelled 0, 1, 2 across the width
    assert samples[0].gt_sem_seg.data[0, 0].tolist() == \
        [0] * 11 + [1] * 11 + [2] * 10
    losses = model(x, samples, mode='loss')
    assert torch.isfinite(losses['decode.loss_ce'])


@pytest.mark.parametrize('hw', [(2, 2), (3, 5), (8, 8)])
@pytest.mark.parametrize('size', [1, 2, 3, 6, (2, 5)])
def test_pooling_by_bins_is_adaptive_average_pooling(hw, size):
    from mmrazor_quant.models.codebases.mmseg_rewrites import (
        adaptive_avg_pool_by_bins,
    )
    x = torch.randn(2, 3, *hw)
    torch.testing.assert_close(adaptive_avg_pool_by_bins(x, size),
                               torch.nn.functional.adaptive_avg_pool2d(
                                   x, size))


def test_fastscnn_pyramid_pooling_traces_without_adaptive_pools():
    # its 2 x 2 global features pool to 3 x 3 and 6 x 6: bins of slices
    # and means in the graph, 1 x 1 and 2 x 2 stay adaptive pools
    model = MODELS.build(quant_cfg(fastscnn_cfg(), 'openvino', 64))
    nodes = list(model.qmodels['tensor'].graph.nodes)
    pools = [n.target for n in nodes if n.op == 'call_module'
             and str(n.target).endswith(('ppm.0.0', 'ppm.1.0', 'ppm.2.0',
                                         'ppm.3.0'))]
    assert sorted(pools) == ['backbone.global_feature_extractor.ppm.0.0',
                             'backbone.global_feature_extractor.ppm.1.0']
    # one slice per bin and axis: (3 + 3) + (6 + 6)
    assert sum(n.target == 'narrow' for n in nodes) == 18


@pytest.mark.parametrize('heads', [1, 2, 5])
def test_written_out_attention_is_torch_attention(heads):
    from mmrazor_quant.models.codebases.mmseg_rewrites import (
        written_out_attention,
    )
    torch.manual_seed(0)
    mha = torch.nn.MultiheadAttention(40, heads).eval()
    q, kv = torch.randn(2, 7, 40), torch.randn(2, 3, 40)
    want = mha(q.transpose(0, 1), kv.transpose(0, 1),
               kv.transpose(0, 1))[0].transpose(0, 1)
    torch.testing.assert_close(written_out_attention(mha, q, kv), want,
                               rtol=1e-5, atol=1e-5)


def test_attention_dropout_is_refused_with_its_key():
    cfg = segformer_cfg()
    cfg.backbone.attn_drop_rate = 0.1
    with pytest.raises(Exception, match=r'no attention dropout '
                       r'\(attn_drop_rate=0\)'):
        MODELS.build(quant_cfg(cfg, 'openvino', 32))


def test_input_shape_from_the_test_pipeline_else_512():
    model = MODELS.build(segformer_cfg())
    adapter = codebase_of(model)
    pipeline = [dict(type='LoadImageFromFile'),
                dict(type='Resize', scale=(48, 32), keep_ratio=False),
                dict(type='LoadAnnotations'), dict(type='PackSegInputs')]
    assert adapter.input_shape(model, pipeline) == (
        (3, 32, 48), "the test pipeline's Resize")
    # mmseg's own test pipelines keep the ratio: the adapter's default
    keep = [dict(type='Resize', scale=(2048, 512), keep_ratio=True)]
    assert adapter.input_shape(model, keep)[0] == (3, 512, 512)


@pytest.mark.parametrize('spatial', [1, 2])
def test_nmf_factorises_from_seeded_bases(spatial):
    """SegNeXt's NMF2D (``rand_init=True``) draws its bases every forward;
    the traced one starts from bases drawn once, seeded: the same output
    on every call, the module's own ``rand_init=False`` factorisation from
    those bases, at any batch size."""
    pytest.importorskip('mmseg')
    from mmseg.models.decode_heads.ham_head import NMF2D

    from mmrazor_quant.models.codebases.mmseg_rewrites import (
        _fixed_bases_decomposition,
        seeded_nmf_bases,
    )
    torch.manual_seed(0)
    nmf = NMF2D(dict(MD_S=spatial, MD_R=4, eval_steps=7, rand_init=True))
    nmf.eval()
    x = torch.rand(3, 8, 5, 6)  # NMF factorises non-negative features
    first = _fixed_bases_decomposition(nmf, x)
    again = _fixed_bases_decomposition(nmf, x)
    torch.testing.assert_close(first, again, rtol=0, atol=0)
    torch.testing.assert_close(nmf.bases, seeded_nmf_bases(spatial,
                                                           8 // spatial, 4))
    # the module's own fixed-bases path from the same buffer
    reference = NMF2D(dict(MD_S=spatial, MD_R=4, eval_steps=7,
                           rand_init=False)).eval()
    reference.register_buffer('bases', nmf.bases.clone())
    torch.testing.assert_close(first, reference(x), rtol=1e-6, atol=1e-6)
    # one image alone gives its row of the batch
    torch.testing.assert_close(_fixed_bases_decomposition(nmf, x[1:2]),
                               first[1:2], rtol=1e-5, atol=1e-6)
