"""Traceable modes of mmdet's detection transformers (DETR, Conditional
DETR, DAB-DETR).

A ``DetectionTransformer`` builds its padding masks from the data samples
(``pre_transformer``: one mask per image from its ``img_shape`` inside the
batch's ``batch_input_shape``) and its positional encoding from the masks;
its head collects the ground truths and image metas in a loop over the
samples. As in mmdeploy, a batch without data samples (``tensor`` mode,
the exported graph) is unpadded: every image fills the batch, so the masks
are all ``False`` and the positional encoding is that of an all-valid
mask. The rewritten ``pre_transformer`` (:func:`detr_pre_transformer`)
builds the masks and the encoding in two ``torch.fx.wrap``-ed calls
(:func:`padding_masks`, :func:`positions_of`), from the samples where
there are some (``predict`` and ``loss`` keep mmdet's masks of padded
batches); the encoder, decoder and head after them are traced, so their
linears and attention matmuls are quantized. The Hungarian matching and
the losses (the head's ``loss_by_feat``) and the decoding
(``predict_by_feat``) stay outside the graph, as a dense head's.
``tensor`` mode ends at the head's outputs of every decoder layer (class
scores and normalised ``cx, cy, w, h`` boxes).

mmcv's ``MultiheadAttention`` calls torch's ``nn.MultiheadAttention``, a
``torch.nn`` module the tracer keeps whole (and so in float); its trace
writes the attention out (:func:`written_out_attention`, the padding mask
added to the logits before the softmax). Conditional DETR's and DAB-DETR's
``ConditionalAttention`` scales its queries by ``float(size) ** -0.5`` of
the inputs' shapes, which a trace keeps as a graph value; its trace takes
the sizes from the module's dimensions.
"""
from typing import Any, List, Optional, Sequence, Tuple

import torch
import torch.fx
import torch.nn.functional as F
from torch import Tensor

from .mmdet_rewrites import add_predictions, gt_instances_of, img_metas_of
from .mmseg_rewrites import masked_logits, written_out_attention

__all__ = [
    'detr_rewrites', 'detr_pre_transformer', 'padding_masks',
    'check_detection_transformer'
]

def padding_masks(feat: Tensor,
                  batch_data_samples: Optional[List[Any]]) -> Tensor:
    """``(N, h, w)`` bool masks of ``feat``'s positions outside each image
    (``True``: padding), as mmdet's ``DETR.pre_transformer`` builds them
    from the samples' ``img_shape`` in their ``batch_input_shape``; all
    ``False`` without samples (an unpadded batch)."""
    n, h, w = feat.shape[0], feat.shape[-2], feat.shape[-1]
    if batch_data_samples is None:
        return feat.new_zeros((n, h, w), dtype=torch.bool)
    input_h, input_w = batch_data_samples[0].batch_input_shape
    masks = feat.new_ones((n, input_h, input_w))
    for i, sample in enumerate(batch_data_samples):
        img_h, img_w = sample.img_shape
        masks[i, :img_h, :img_w] = 0
    return F.interpolate(masks[:, None], size=(h, w)).to(torch.bool)[:, 0]


def positions_of(positional_encoding: torch.nn.Module,
                 masks: Tensor) -> Tensor:
    """``positional_encoding(masks)``: ``(N, C, h, w)``."""
    return positional_encoding(masks)


def attention_dropout(weights: Tensor, p: float,
                      module: torch.nn.Module) -> Tensor:
    """``F.dropout`` of the attention weights in the module's run-time mode
    (a traced ``F.dropout`` would keep the mode of the trace)."""
    return F.dropout(weights, p, module.training)


# Record calls of these as graph nodes instead of tracing into them (the
# imported ones too: ``wrap`` patches the names of this module).
for _name in ('padding_masks', 'positions_of', 'attention_dropout',
              'img_metas_of', 'gt_instances_of', 'add_predictions'):
    torch.fx.wrap(_name)


def detr_pre_transformer(self, img_feats: Sequence[Tensor],
                         batch_data_samples: Optional[List[Any]] = None
                         ) -> Tuple[dict, dict]:
    """``DETR.pre_transformer`` with the masks and the positional encoding
    built in graph calls (:func:`padding_masks`, :func:`positions_of`)
    and no sample needed (an unpadded batch without)."""
    feat = img_feats[-1]
    masks = padding_masks(feat, batch_data_samples)
    pos_embed = positions_of(self.positional_encoding, masks)
    # (N, C, h, w) -> (N, h * w, C); the masks (N, h * w)
    feat = feat.flatten(2).permute(0, 2, 1)
    pos_embed = pos_embed.flatten(2).permute(0, 2, 1)
    masks = masks.flatten(1)
    return (dict(feat=feat, feat_mask=masks, feat_pos=pos_embed),
            dict(memory_mask=masks, memory_pos=pos_embed))


def _defining_class(obj: Any, method: str) -> type:
    """The class of ``obj``'s MRO that defines ``method``."""
    return next(cls for cls in type(obj).__mro__ if method in cls.__dict__)


def check_detection_transformer(model: torch.nn.Module) -> None:
    """Refuse a detection transformer whose data-dependent methods the
    rewrites do not cover.

    Raises:
        TraceError: Naming the module and method: a deformable attention
            (Deformable DETR, DINO), a ``pre_transformer`` other than
            DETR's, or a head whose ``loss`` / ``predict`` the rewrites do
            not cover.
    """
    from ..task_modules.tracer.trace_error import TraceError
    deformable = next(((name, m) for name, m in model.named_modules()
                       if type(m).__name__ == 'MultiScaleDeformableAttention'),
                      None)
    if deformable is not None:
        raise TraceError(
            f'model.{deformable[0]} (MultiScaleDeformableAttention), method '
            'MultiScaleDeformableAttention.forward: it splits its values by '
            "the levels' sizes read from the spatial_shapes tensor, as "
            f"{_defining_class(model, 'pre_transformer').__name__}"
            ".pre_transformer and the encoder's reference points loop over "
            'it (data in a graph, not shapes); exported: a custom op '
            '(MMCVMultiScaleDeformableAttention) neither OpenVINO nor '
            'onnxruntime has')
    rewritten = {(cls.__name__, name) for cls, name, _ in detr_rewrites()}
    found = [(model, 'model', 'pre_transformer')] + [
        (model.bbox_head, 'model.bbox_head', name)
        for name in ('loss', 'predict')
    ]
    for module, key, method in found:
        owner = _defining_class(module, method).__name__
        if (owner, method) not in rewritten:
            raise TraceError(
                f'{key} ({type(module).__name__}), method {owner}.{method}: '
                'it reads the data samples (padding masks, ground truths, '
                'image metas) in a per-image loop that the mmdet adapter '
                "rewrites for DETR's pre_transformer (DETR, Conditional "
                "DETR, DAB-DETR) and these heads' loss and predict only")


def _detr_forward(self, batch_inputs, batch_data_samples=None):
    # ``bbox_head(...)``, not ``bbox_head.forward(...)``: called as a module
    # the head's ops get its scope in every mode (see ``mmdet_rewrites``)
    head_inputs = self.forward_transformer(
        self.extract_feat(batch_inputs), batch_data_samples)
    return self.bbox_head(**head_inputs)


def _detr_predict(self, batch_inputs, batch_data_samples,
                  rescale: bool = True):
    head_inputs = self.forward_transformer(
        self.extract_feat(batch_inputs), batch_data_samples)
    results_list = self.bbox_head.predict(
        **head_inputs, rescale=rescale,
        batch_data_samples=batch_data_samples)
    return add_predictions(batch_data_samples, results_list)


def _detr_head_loss(self, hidden_states, batch_data_samples,
                    references=None):
    """``DETRHead.loss`` (and Conditional DETR's, with ``references``)
    with the samples unpacked in one graph call; the matching and the
    losses (``loss_by_feat``) are skipped methods."""
    outs = self(hidden_states) if references is None else self(
        hidden_states, references)
    unpacked = gt_instances_of(batch_data_samples)
    return self.loss_by_feat(*outs, unpacked[0], unpacked[2])


def _decoded(head, outs, batch_data_samples, rescale: bool):
    return head.predict_by_feat(
        *outs, batch_img_metas=img_metas_of(batch_data_samples),
        rescale=rescale)


def _detr_head_predict(self, hidden_states, batch_data_samples,
                       rescale: bool = True):
    """``DETRHead.predict``: the last decoder layer's outputs decoded by
    ``predict_by_feat`` (a skipped method)."""
    outs = self(hidden_states[-1].unsqueeze(0))
    return _decoded(self, outs, batch_data_samples, rescale)


def _conditional_head_predict(self, hidden_states, references,
                              batch_data_samples, rescale: bool = True):
    """``ConditionalDETRHead.predict``: the last layer's queries with the
    references (one set for every layer)."""
    outs = self(hidden_states[-1].unsqueeze(0), references)
    return _decoded(self, outs, batch_data_samples, rescale)


def _dab_head_predict(self, hidden_states, references, batch_data_samples,
                      rescale: bool = True):
    """``DABDETRHead.predict``: the last layer's queries and anchors."""
    outs = self(hidden_states[-1].unsqueeze(0), references[-1].unsqueeze(0))
    return _decoded(self, outs, batch_data_samples, rescale)


def _attention_forward(self, query, key=None, value=None, identity=None,
                       query_pos=None, key_pos=None, attn_mask=None,
                       key_padding_mask=None, **kwargs):
    """mmcv's ``MultiheadAttention.forward`` with torch's attention written
    out (the same arguments and numbers)."""
    key = query if key is None else key
    value = key if value is None else value
    identity = query if identity is None else identity
    if key_pos is None and query_pos is not None and \
            query_pos.shape == key.shape:
        key_pos = query_pos
    if query_pos is not None:
        query = query + query_pos
    if key_pos is not None:
        key = key + key_pos
    if not self.batch_first:  # (L, N, E) -> (N, L, E)
        query, key, value = (t.transpose(0, 1) for t in (query, key, value))
    out = written_out_attention(
        self.attn, query, key, value, attn_mask=attn_mask,
        key_padding_mask=key_padding_mask,
        dropout=lambda w: attention_dropout(w, self.attn.dropout, self.attn))
    if not self.batch_first:
        out = out.transpose(0, 1)
    return identity + self.dropout_layer(self.proj_drop(out))


def _conditional_forward_attn(self, query, key, value, attn_mask=None,
                              key_padding_mask=None):
    """mmdet's ``ConditionalAttention.forward_attn`` with its head sizes
    and scaling from the module's dimensions, not from the inputs' shapes
    (a traced ``float(size) ** -0.5`` would be a graph value that the
    quantizer takes for an activation)."""
    heads = self.num_heads
    # a cross attention's queries and keys are content and position joined
    head_dims = self.embed_dims * (2 if self.cross_attn else 1) // heads
    v_head_dims = self.embed_dims // heads

    def split_heads(x: Tensor, dims: int) -> Tensor:  # (N, h, L, d)
        return x.reshape(x.shape[0], -1, heads, dims).transpose(1, 2)

    q = split_heads(query * head_dims**-0.5, head_dims)
    k = split_heads(key, head_dims)
    v = split_heads(value, v_head_dims)
    logits = torch.matmul(q, k.transpose(-2, -1))
    if attn_mask is not None:  # (L, S) or (N * h, L, S)
        logits = masked_logits(
            logits, attn_mask if attn_mask.dim() == 2 else
            attn_mask.reshape(logits.shape))
    if key_padding_mask is not None:  # (N, S)
        logits = masked_logits(logits, key_padding_mask[:, None, None, :])
    weights = self.attn_drop(torch.softmax(logits, dim=-1))
    out = torch.matmul(weights, v).transpose(1, 2).flatten(2)
    return self.out_proj(out), weights.sum(dim=1) / heads


def detr_rewrites() -> List[Tuple[type, str, Any]]:
    """``(class, method, replacement)`` of DETR's three modes and of
    mmcv's attention."""
    try:
        from mmcv.cnn.bricks.transformer import MultiheadAttention
        from mmdet.models.dense_heads import (
            ConditionalDETRHead,
            DABDETRHead,
            DETRHead,
        )
        from mmdet.models.detectors.base_detr import DetectionTransformer
        from mmdet.models.detectors.detr import DETR
        from mmdet.models.layers.transformer.utils import (
            ConditionalAttention,
        )
    except ImportError:  # no mmdet: nothing to rewrite
        return []
    return [(DETR, 'pre_transformer', detr_pre_transformer),
            (DetectionTransformer, '_forward', _detr_forward),
            (DetectionTransformer, 'predict', _detr_predict),
            (DETRHead, 'loss', _detr_head_loss),
            (DETRHead, 'predict', _detr_head_predict),
            (ConditionalDETRHead, 'loss', _detr_head_loss),
            (ConditionalDETRHead, 'predict', _conditional_head_predict),
            (DABDETRHead, 'predict', _dab_head_predict),
            (MultiheadAttention, 'forward', _attention_forward),
            (ConditionalAttention, 'forward_attn',
             _conditional_forward_attn)]
