"""Traceable stand-ins for mmseg code that loops over data samples or
dicts.

mmseg's ``EncoderDecoder`` collects image metas from its data samples,
prefixes each head's loss dict and attaches a prediction to each sample;
under ``torch.fx`` the samples (and the heads' loss dicts) are ``Proxy``
objects that cannot be iterated. During a trace, :func:`mmseg_rewrites`
swaps ``predict`` and ``loss`` for versions that move those loops into the
functions below, which ``torch.fx.wrap`` records as single
``call_function`` nodes; the graph runs the real loops at run time. The
heads' ``forward`` is traced as written; their ``loss_by_feat`` and
``predict_by_feat`` (which read the samples) are skipped by the adapter.

The pyramid pooling of PSPNet and Fast-SCNN (``PPM``) pools to fixed
sizes (1, 2, 3, 6) that need not divide the feature map (Fast-SCNN's is
2 x 2 at a 64 x 64 input), which ONNX cannot export; its trace pools each
bin with a slice and a mean instead (:func:`adaptive_avg_pool_by_bins`),
the same numbers in ops every runtime has.

``test_cfg.mode='slide'`` (UNet's configs) is traced for the traced input
size: the windows are fixed by the image size, as every shape of the graph
is, so the loop unrolls (:func:`slide_logits`). A cascade
(``CascadeEncoderDecoder``: OCRNet) runs its heads in turn, each given the
previous one's output, in ``predict`` and ``loss``.

BiSeNetV2's ``BGALayer`` average-pools with a zero padding that the
average counts; OpenVINO's int8 pool does not count it, so its trace pads
explicitly first (:func:`avg_pool_with_explicit_pads`).

SegFormer's ``EfficientMultiheadAttention`` calls torch's
``nn.MultiheadAttention``, a ``torch.nn`` module the tracer keeps whole
(and so in float). Its trace writes the attention out
(:func:`written_out_attention`): the query, key and value projections of
the packed ``in_proj_weight`` (``F.linear``), ``Q @ K^T``, softmax,
``attn @ V`` and the ``out_proj`` linear, so the backends' rules quantize
the two matmuls and the output projection.

SegNeXt's ``LightHamHead`` factorises its features with ``NMF2D``, whose
configs set ``rand_init=True``: every forward, in eval too, starts the
factorisation from bases drawn with ``torch.rand``. A graph that draws them
runs another factorisation at every call (the simulation disagrees with
itself), and the export draws its own (``RandomUniformLike``): OpenVINO and
onnxruntime then agree with the simulation to 15 dB whatever the
quantization. The trace draws the bases once, seeded
(:func:`seeded_nmf_bases`), into the module's ``bases`` buffer, and
factorises from them as the module does with ``rand_init=False``, as
deployments of SegNeXt fix them.
"""
import contextlib
from typing import Any, Callable, Dict, Iterator, List, Optional, Tuple
from unittest import mock

import torch
import torch.fx
import torch.nn.functional as F
from torch import Tensor

from .base import static_shape
from .training_branches import training_branches

__all__ = [
    'mmseg_rewrites', 'adaptive_avg_pool_by_bins', 'written_out_attention',
    'masked_logits', 'seeded_nmf_bases'
]

#: Seed of the bases a traced ``NMF2D`` starts its factorisation from.
NMF_BASES_SEED = 0


def checked_seg_samples(data_samples: List[Any],
                        need_gt: bool = True) -> List[Any]:
    """``data_samples`` unchanged if they are mmseg's ``SegDataSample``s
    (with ``gt_sem_seg`` when ``need_gt``).

    Raises:
        TypeError: If a sample is of another type (e.g. mmdet's
            ``DetDataSample``).
        ValueError: If ``need_gt`` and a sample has no ``gt_sem_seg``.
    """
    from mmseg.structures import SegDataSample
    for i, sample in enumerate(data_samples):
        if not isinstance(sample, SegDataSample):
            raise TypeError(
                f'data_samples[{i}] is a {type(sample).__name__}; mmseg '
                'segmentors take SegDataSample (mmseg.structures), as '
                "mmseg's PackSegInputs packs them")
        if need_gt and 'gt_sem_seg' not in sample:
            raise ValueError(
                f'data_samples[{i}] has no gt_sem_seg: the loss mode needs '
                "the label map (mmseg's LoadAnnotations in the pipeline)")
    return data_samples


def seg_img_metas(shape: Tuple[int, ...],
                  data_samples: Optional[List[Any]]) -> List[dict]:
    """The ``metainfo`` of each sample; without samples, those
    ``EncoderDecoder.predict`` makes from the batch's ``shape``."""
    if data_samples is not None:
        checked_seg_samples(data_samples, need_gt=False)
        return [sample.metainfo for sample in data_samples]
    hw = torch.Size(shape[2:])
    return [dict(ori_shape=hw, img_shape=hw, pad_shape=hw,
                 padding_size=[0, 0, 0, 0])] * shape[0]


def seg_predictions(seg_logits: Tensor, data_samples: Optional[List[Any]],
                    align_corners: bool,
                    threshold: Optional[float]) -> List[Any]:
    """mmseg's ``BaseSegmentor.postprocess_result``: logits cropped,
    resized to each image's ``ori_shape`` and argmaxed into
    ``pred_sem_seg`` (it reads only ``align_corners`` and the decode head's
    ``threshold`` of the segmentor)."""
    from types import SimpleNamespace

    from mmseg.models.segmentors.base import BaseSegmentor
    owner = SimpleNamespace(align_corners=align_corners,
                            decode_head=SimpleNamespace(threshold=threshold))
    return BaseSegmentor.postprocess_result(owner, seg_logits, data_samples)


def prefixed_losses(losses: Dict[str, Dict[str, Tensor]]) -> dict:
    """``{prefix: {name: loss}}`` flattened to ``{prefix.name: loss}``, as
    ``EncoderDecoder.loss`` names its heads' losses."""
    return {f'{prefix}.{name}': value
            for prefix, head_losses in losses.items()
            for name, value in head_losses.items()}


def _pool_dim(x: Tensor, dim: int, out: int) -> Tensor:
    """Adaptive average pooling of ``x`` along ``dim`` to ``out`` bins:
    bin ``i`` averages ``[floor(i * n / out), ceil((i + 1) * n / out))``,
    torch's bins."""
    n = int(x.shape[dim])
    if n == out:
        return x
    bins = [x.narrow(dim, i * n // out, -(-(i + 1) * n // out) - i * n // out)
            .mean(dim, keepdim=True) for i in range(out)]
    return bins[0] if out == 1 else torch.cat(bins, dim)


def adaptive_avg_pool_by_bins(x: Tensor, output_size) -> Tensor:
    """``F.adaptive_avg_pool2d(x, output_size)`` for a fixed input size,
    one slice and mean per bin (rows, then columns: the bins are
    rectangles, so the pooling is separable)."""
    out_h, out_w = (output_size, output_size) if isinstance(
        output_size, int) else output_size
    out_h = int(x.shape[-2]) if out_h is None else out_h
    out_w = int(x.shape[-1]) if out_w is None else out_w
    return _pool_dim(_pool_dim(x, -2, out_h), -1, out_w)


def _ppm_forward(self, x: Tensor) -> List[Tensor]:
    from mmseg.models.utils import resize
    h, w = (int(v) for v in x.shape[2:])
    outs = []
    for stage in self:
        pool = stage[0]
        size = pool.output_size
        size = (size, size) if isinstance(size, int) else size
        if h % size[0] or w % size[1]:  # ONNX exports divisible sizes only
            pooled = adaptive_avg_pool_by_bins(x, size)
        else:
            pooled = pool(x)
        for module in list(stage)[1:]:  # the 1x1 ConvModule
            pooled = module(pooled)
        outs.append(resize(pooled, size=(h, w), mode='bilinear',
                           align_corners=self.align_corners))
    return outs


def written_out_attention(mha: torch.nn.MultiheadAttention, query: Tensor,
                          key_value: Tensor, value: Optional[Tensor] = None,
                          attn_mask: Optional[Tensor] = None,
                          key_padding_mask: Optional[Tensor] = None,
                          dropout: Optional[Callable[[Tensor], Tensor]] = None
                          ) -> Tensor:
    """``mha(query, key_value, key_value)[0]`` for batch-first ``(N, L,
    E)`` inputs of a ``nn.MultiheadAttention`` with one packed
    ``in_proj_weight``, written out in traceable ops (no bias_k / bias_v).

    Args:
        value (Tensor, optional): The values when they are not the keys
            (``key_value``). Defaults to None.
        attn_mask, key_padding_mask (Tensor, optional): As torch takes them:
            ``True`` (bool) masks a position out, a float mask is added to
            the logits. Defaults to None.
        dropout (callable, optional): Applied to the attention weights.
    """
    embed, heads = mha.embed_dim, mha.num_heads
    dim = embed // heads
    value = key_value if value is None else value
    w_q, w_k, w_v = mha.in_proj_weight.chunk(3)
    b_q, b_k, b_v = (None, ) * 3 if mha.in_proj_bias is None else \
        mha.in_proj_bias.chunk(3)

    def split_heads(x: Tensor) -> Tensor:  # (N, L, E) -> (N, h, L, d)
        return x.reshape(x.shape[0], -1, heads, dim).transpose(1, 2)

    q = split_heads(F.linear(query, w_q, b_q))
    k = split_heads(F.linear(key_value, w_k, b_k))
    v = split_heads(F.linear(value, w_v, b_v))
    logits = torch.matmul(q * dim**-0.5, k.transpose(-2, -1))
    if attn_mask is not None:  # (L, S) or (N * h, L, S)
        mask = attn_mask if attn_mask.dim() == 2 else attn_mask.reshape(
            logits.shape)
        logits = masked_logits(logits, mask)
    if key_padding_mask is not None:  # (N, S)
        logits = masked_logits(logits, key_padding_mask[:, None, None, :])
    attn = torch.softmax(logits, dim=-1)
    if dropout is not None:
        attn = dropout(attn)
    out = torch.matmul(attn, v).transpose(1, 2)
    out = out.reshape(out.shape[0], -1, embed)
    return mha.out_proj(out)


def masked_logits(logits: Tensor, mask: Tensor) -> Tensor:
    """``logits`` with a bool mask's ``True`` positions at ``-inf``, or a
    float mask added (torch's attention masks)."""
    if mask.dtype == torch.bool:
        return logits.masked_fill(mask, float('-inf'))
    return logits + mask


def _efficient_attention_forward(self, x: Tensor, hw_shape,
                                 identity: Optional[Tensor] = None):
    from mmseg.models.utils import nchw_to_nlc, nlc_to_nchw
    mha = self.attn
    if not mha._qkv_same_embed_dim or mha.bias_k is not None \
            or mha.dropout > 0:
        # a traced dropout would keep the training flag of the trace
        raise ValueError(
            f'{type(self).__name__}: only attention with one packed '
            'in_proj_weight, no bias_k/bias_v and no attention dropout '
            '(attn_drop_rate=0) is written out for tracing')
    x_kv = x
    if self.sr_ratio > 1:
        x_kv = self.norm(nchw_to_nlc(self.sr(nlc_to_nchw(x, hw_shape))))
    identity = x if identity is None else identity
    if self.batch_first:
        out = written_out_attention(mha, x, x_kv)
    else:  # (L, N, E) inputs
        out = written_out_attention(mha, x.transpose(0, 1),
                                    x_kv.transpose(0, 1)).transpose(0, 1)
    return identity + self.dropout_layer(self.proj_drop(out))


def avg_pool_with_explicit_pads(pool: torch.nn.AvgPool2d,
                                x: Tensor) -> Tensor:
    """``pool(x)`` with its zero padding as a ``Pad`` of its own.

    An average pool that counts its padding (``count_include_pad=True``,
    torch's default) exports as one ``AveragePool`` with
    ``count_include_pad=1``; OpenVINO's CPU plugin averages such an int8
    pool over the valid pixels only, so every window at the border comes
    out up to 9/4 too large (BiSeNetV2's ``detail_down`` at 2 x 2: three
    windows of four, 84 steps off, the logits at -1.4 dB). Zeros padded
    first and a pool without padding are the same numbers in torch, and
    every runtime computes them alike.
    """
    pad = pool.padding
    ph, pw = (pad, pad) if isinstance(pad, int) else pad
    if not (ph or pw) or not pool.count_include_pad:
        return pool(x)
    return F.avg_pool2d(F.pad(x, (pw, pw, ph, ph)), pool.kernel_size,
                        pool.stride, 0, pool.ceil_mode, True,
                        pool.divisor_override)


def _sequential_explicit_pads(sequential: torch.nn.Sequential,
                              x: Tensor) -> Tensor:
    for module in sequential:
        x = avg_pool_with_explicit_pads(module, x) if isinstance(
            module, torch.nn.AvgPool2d) else module(x)
    return x


def _bga_forward(self, x_d: Tensor, x_s: Tensor) -> Tensor:
    # mmseg's BGALayer.forward, its detail_down pool padded explicitly
    from mmseg.models.utils import resize
    detail_dwconv = self.detail_dwconv(x_d)
    detail_down = _sequential_explicit_pads(self.detail_down, x_d)
    semantic_conv = self.semantic_conv(x_s)
    semantic_dwconv = self.semantic_dwconv(x_s)
    semantic_conv = resize(input=semantic_conv, size=detail_dwconv.shape[2:],
                           mode='bilinear', align_corners=self.align_corners)
    fuse_1 = detail_dwconv * torch.sigmoid(semantic_conv)
    fuse_2 = detail_down * torch.sigmoid(semantic_dwconv)
    fuse_2 = resize(input=fuse_2, size=fuse_1.shape[2:], mode='bilinear',
                    align_corners=self.align_corners)
    return self.conv(fuse_1 + fuse_2)


def _unet_check_input_divisible(self, x: Tensor) -> None:
    # mmseg's check, on the traced size read without a node in the graph
    # (a shape read of the input would be a second reader of the tensor
    # that the first conv quantizes, moving its fake quant off the input)
    _ORIGINAL[('UNet', '_check_input_divisible')](
        self, torch.empty(static_shape(x), device='meta'))


def seeded_nmf_bases(num_spatial: int, dim: int, rank: int) -> Tensor:
    """``NMF2D``'s initial bases ``(S, D, R)``, drawn as it draws them
    (uniform, each column L2-normalised over ``D``) from a generator seeded
    with :data:`NMF_BASES_SEED`."""
    gen = torch.Generator().manual_seed(NMF_BASES_SEED)
    return F.normalize(torch.rand((num_spatial, dim, rank), generator=gen),
                       dim=1)


def _fixed_bases_decomposition(self, x: Tensor, return_bases=False):
    # the module's fixed-bases path (rand_init=False), its buffer drawn once
    # and seeded; sizes read without nodes, the batch kept symbolic
    _, channels, height, width = static_shape(x)
    dim = channels // self.S
    if not hasattr(self, 'bases'):
        self.register_buffer('bases', seeded_nmf_bases(self.S, dim, self.R))
    flat = x.reshape(-1, dim, height * width)  # (B * S, D, N)
    # (B * S, D, R): broadcast against zeros of the batch (an expand or a
    # repeat by the batch size would fix the traced batch in the graph)
    zeros = torch.zeros_like(x[:, :1, :1, :1])  # (B, 1, 1, 1)
    bases = (self.bases + zeros).reshape(-1, dim, self.R)
    bases, coef = self.local_inference(flat, bases)
    coef = self.compute_coef(flat, bases, coef)
    return torch.bmm(bases, coef.transpose(1, 2)).reshape(
        -1, channels, height, width)


_ORIGINAL = {}


# Record calls of these as graph nodes instead of tracing into them.
torch.fx.wrap('checked_seg_samples')
torch.fx.wrap('seg_img_metas')
torch.fx.wrap('seg_predictions')
torch.fx.wrap('prefixed_losses')
torch.fx.wrap('merged_windows')


def _decoded(segmentor, x) -> Tuple[Any, Any]:
    """``(the last decode head's input, that head)``: the features, or for
    a cascade (``CascadeEncoderDecoder``: OCRNet) the features and the
    previous stages' output. The heads' ``forward`` is called as mmseg's
    cascade calls it (not through the module), so the graph's tensors are
    named as in the tensor mode's graph and share its fake quants."""
    heads = segmentor.decode_head
    if not isinstance(heads, torch.nn.ModuleList):
        return (x, ), heads
    out = heads[0].forward(x)
    for head in list(heads)[1:-1]:
        out = head.forward(x, out)
    return (x, out), heads[-1]


def _window_logits(segmentor, crop: Tensor) -> Tensor:
    """Logits of one sliding window, resized to it (``encode_decode``).
    The head's ``forward`` is called as the tensor mode calls it (not
    through the module), so its nodes share the tensor graph's fake
    quants."""
    from mmseg.models.utils import resize
    args, head = _decoded(segmentor, segmentor.extract_feat(crop))
    return resize(head.forward(*args), size=static_shape(crop)[2:],
                  mode='bilinear', align_corners=segmentor.align_corners)


def _windows(segmentor, h_img: int, w_img: int) -> List[Tuple[int, ...]]:
    """``(y1, y2, x1, x2)`` of mmseg's ``slide_inference`` windows."""
    h_stride, w_stride = segmentor.test_cfg.stride
    h_crop, w_crop = segmentor.test_cfg.crop_size
    h_grids = max(h_img - h_crop + h_stride - 1, 0) // h_stride + 1
    w_grids = max(w_img - w_crop + w_stride - 1, 0) // w_stride + 1
    boxes = []
    for h_idx in range(h_grids):
        for w_idx in range(w_grids):
            y2 = min(h_idx * h_stride + h_crop, h_img)
            x2 = min(w_idx * w_stride + w_crop, w_img)
            boxes.append((max(y2 - h_crop, 0), y2, max(x2 - w_crop, 0), x2))
    return boxes


def window_batch(inputs: Tensor, boxes: List[Tuple[int, ...]]) -> Tensor:
    """The windows ``boxes`` of ``inputs`` ``(N, C, H, W)`` as one batch
    ``(K * N, C, h, w)`` (window-major), cut with indexing and reshapes
    only, which the quantizers treat as moving values: every window stays
    on the grid of the input's fake quant, the one the tensor mode
    calibrates (a slice per window would get a fake quant of its own)."""
    rows = torch.stack([torch.arange(y1, y2) for y1, y2, _, _ in boxes])
    cols = torch.stack([torch.arange(x1, x2) for _, _, x1, x2 in boxes])
    index = torch.arange(len(boxes))[:, None, None]
    stack = inputs.unsqueeze(0).expand(len(boxes), -1, -1, -1, -1)
    # advanced indices apart: their broadcast (K, h, w) comes first
    picked = stack[index, :, :, rows[:, :, None], cols[:, None, :]]
    return picked.permute(0, 3, 4, 1, 2).flatten(0, 1)


def merged_windows(logits: Tensor, boxes: List[Tuple[int, ...]],
                   size: Tuple[int, int]) -> Tensor:
    """mmseg's ``slide_inference`` merge: each window's logits (batch
    window-major, as :func:`window_batch` cut them) padded to its place,
    summed and divided by how many windows cover each pixel."""
    h_img, w_img = size
    per_window = logits.reshape(len(boxes), -1, *logits.shape[1:])
    preds = logits.new_zeros((per_window.shape[1], logits.shape[1], h_img,
                              w_img))
    count = logits.new_zeros((1, 1, h_img, w_img))
    for (y1, y2, x1, x2), window in zip(boxes, per_window):
        preds = preds + F.pad(window, (x1, w_img - x2, y1, h_img - y2))
        count[:, :, y1:y2, x1:x2] += 1
    return preds / count


def slide_logits(segmentor, inputs: Tensor) -> Tensor:
    """mmseg's ``slide_inference`` for the traced input size: the windows
    of ``test_cfg.crop_size`` every ``test_cfg.stride`` are fixed by the
    image size (as every shape of the graph is); the graph runs them as
    one batch through the model, and the merge runs outside it."""
    h_img, w_img = static_shape(inputs)[-2:]
    boxes = _windows(segmentor, h_img, w_img)
    logits = _window_logits(segmentor, window_batch(inputs, boxes))
    return merged_windows(logits, boxes, (h_img, w_img))


def _segmentor_predict(self, inputs: Tensor, data_samples=None):
    mode = self.test_cfg.get('mode', 'whole')
    if mode not in ('whole', 'slide'):
        raise ValueError(
            f'{type(self).__name__}: test_cfg.mode={mode!r} is neither '
            "'whole' nor 'slide'")
    # the shape read without a node (a second reader of the input would
    # move its fake quant off it)
    batch_img_metas = seg_img_metas(static_shape(inputs), data_samples)
    if mode == 'slide':
        seg_logits = slide_logits(self, inputs)
    else:
        args, head = _decoded(self, self.extract_feat(inputs))
        seg_logits = head.predict(*args, batch_img_metas, self.test_cfg)
    return seg_predictions(seg_logits, data_samples, self.align_corners,
                           getattr(_decoded_head(self), 'threshold', None))


def _decoded_head(segmentor):
    heads = segmentor.decode_head
    return heads[-1] if isinstance(heads, torch.nn.ModuleList) else heads


def _head_losses(segmentor, x, data_samples) -> Dict[str, Any]:
    """``{prefix: losses}`` in ``EncoderDecoder.loss``'s order and names
    (``decode``, ``aux``/``aux_i``; a cascade's ``decode_i``)."""
    heads = segmentor.decode_head
    losses = {}
    if isinstance(heads, torch.nn.ModuleList):
        # each stage's forward once (mmseg's loss runs the first twice,
        # which would give the graph a second, uncalibrated set of fake
        # quants), each stage's loss on it
        out = heads[0].forward(x)
        losses['decode_0'] = heads[0].loss_by_feat(out, data_samples)
        for i in range(1, len(heads)):
            out = heads[i].forward(x, out)
            losses[f'decode_{i}'] = heads[i].loss_by_feat(out, data_samples)
    else:
        losses['decode'] = heads.loss(x, data_samples, segmentor.train_cfg)
    aux = getattr(segmentor, 'auxiliary_head', None)
    if isinstance(aux, torch.nn.ModuleList):
        for i, head in enumerate(aux):
            losses[f'aux_{i}'] = head.loss(x, data_samples,
                                           segmentor.train_cfg)
    elif aux is not None:
        losses['aux'] = aux.loss(x, data_samples, segmentor.train_cfg)
    return losses


def _segmentor_loss(self, inputs: Tensor, data_samples) -> dict:
    data_samples = checked_seg_samples(data_samples)
    with training_branches(self):
        x = self.extract_feat(inputs)
        return prefixed_losses(_head_losses(self, x, data_samples))


def _rewrites() -> List[Tuple[type, str, Any]]:
    try:
        from mmseg.models.backbones.bisenetv2 import BGALayer
        from mmseg.models.backbones.mit import EfficientMultiheadAttention
        from mmseg.models.backbones.unet import UNet
        from mmseg.models.decode_heads.ham_head import (
            Matrix_Decomposition_2D_Base,
        )
        from mmseg.models.decode_heads.psp_head import PPM
        from mmseg.models.segmentors import EncoderDecoder
    except ImportError:  # no mmseg: nothing to rewrite
        return []
    _ORIGINAL.setdefault(('UNet', '_check_input_divisible'),
                         UNet.__dict__['_check_input_divisible'])
    return [(EncoderDecoder, 'predict', _segmentor_predict),
            (EncoderDecoder, 'loss', _segmentor_loss),
            (PPM, 'forward', _ppm_forward),
            (BGALayer, 'forward', _bga_forward),
            (UNet, '_check_input_divisible', _unet_check_input_divisible),
            (EfficientMultiheadAttention, 'forward',
             _efficient_attention_forward),
            (Matrix_Decomposition_2D_Base, 'forward',
             _fixed_bases_decomposition)]


@contextlib.contextmanager
def mmseg_rewrites() -> Iterator[None]:
    """Swap mmseg's sample-looping methods for traceable ones meanwhile."""
    with contextlib.ExitStack() as stack:
        for owner, name, replacement in _rewrites():
            stack.enter_context(mock.patch.object(owner, name, replacement))
        yield
