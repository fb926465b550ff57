"""Traceable modes of mmdet's two-stage detectors (Faster R-CNN).

A two-stage detector runs its RoI head on the proposals its RPN selects.
The selection (NMS per image), the RoI sampling of the loss and the
per-image split of the predictions read the data samples or give a number
of boxes only known at run time: each is one ``torch.fx.wrap``-ed call
here, run as written at run time. The RoI extractor (RoIAlign over the
FPN levels) is a graph leaf and stays float, as mmdeploy deploys it; the
RPN's convs and the bbox head's shared FCs are traced, so they are
quantized.

``tensor`` mode, the graph that is exported, ends at ``(rpn cls scores,
rpn bbox preds, rois, cls_score, bbox_pred)``: the RoI head runs on the
RPN's decoded boxes of every level (the best ``nms_pre`` by score where a
level has more), without the NMS, which stays outside the graph with the
rest of the post-processing. ``rois`` is ``(num_images * num_boxes, 5)``,
``(image index, x1, y1, x2, y2)``, as RoIAlign takes it.
"""
import contextlib
from typing import Any, Iterator, List, Sequence, Tuple

import torch
import torch.fx
from torch import Tensor

from .mmdet_rewrites import gt_instances_of, img_metas_of

__all__ = [
    'dense_proposals', 'two_stage_rewrites', 'float_leaves',
    'check_two_stage'
]


def dense_proposals(rpn_head: torch.nn.Module, cls_scores: Sequence[Tensor],
                    bbox_preds: Sequence[Tensor],
                    batch_inputs: Tensor) -> Tensor:
    """The RoIs of the tensor mode: per level, the RPN's boxes decoded from
    its anchors (the best ``test_cfg.nms_pre`` by score where the level has
    more), clipped to the image; no NMS.

    Written with tensor ops only (no per-image loop), so the ONNX exporter
    records it: ``TopK``, ``Gather`` and the decoder's arithmetic.

    Returns:
        Tensor: ``(N * R, 5)`` rois, ``(image index, x1, y1, x2, y2)``.
    """
    num_images = batch_inputs.shape[0]
    img_shape = tuple(batch_inputs.shape[-2:])
    nms_pre = (rpn_head.test_cfg or {}).get('nms_pre', -1)
    sizes = [tuple(s.shape[-2:]) for s in cls_scores]
    priors = rpn_head.prior_generator.grid_priors(
        sizes, dtype=cls_scores[0].dtype, device=cls_scores[0].device)
    reg_dim = rpn_head.bbox_coder.encode_size
    boxes = []
    for score, pred, anchors in zip(cls_scores, bbox_preds, priors):
        # (N, A, H, W) -> (N, H * W * A), in the order of the priors
        score = score.permute(0, 2, 3, 1).reshape(num_images, -1)
        pred = pred.permute(0, 2, 3, 1).reshape(num_images, -1, reg_dim)
        anchors = anchors.unsqueeze(0).expand(num_images, -1, -1)
        if 0 < nms_pre < score.shape[1]:
            # sigmoid and softmax keep the order of the foreground logit
            index = score.topk(nms_pre, dim=1).indices
            pred = pred.gather(1, index[..., None].expand(-1, -1, reg_dim))
            anchors = anchors.gather(
                1, index[..., None].expand(-1, -1, anchors.shape[-1]))
        boxes.append(_decoded(rpn_head.bbox_coder, anchors, pred))
    boxes = torch.cat(boxes, dim=1)
    # clipped to the image as the coder clips (its own ONNX branch imports
    # mmdet 2's ``mmdet.core``)
    h, w = img_shape
    boxes = torch.stack([
        boxes[..., 0].clamp(0, w), boxes[..., 1].clamp(0, h),
        boxes[..., 2].clamp(0, w), boxes[..., 3].clamp(0, h)
    ], dim=-1)
    index = torch.arange(num_images, dtype=boxes.dtype, device=boxes.device)
    index = index.view(-1, 1, 1).expand(-1, boxes.shape[1], 1)
    return torch.cat([index, boxes], dim=2).reshape(-1, 5)


def _decoded(coder: Any, anchors: Tensor, deltas: Tensor) -> Tensor:
    """``(N, R, 4)`` boxes of ``DeltaXYWHBBoxCoder`` unclipped."""
    from mmdet.models.task_modules.coders.delta_xywh_bbox_coder import (
        delta2bbox,
    )
    num_images = deltas.shape[0]
    return delta2bbox(
        anchors.reshape(-1, 4), deltas.reshape(-1, 4), means=coder.means,
        stds=coder.stds, max_shape=None, clip_border=False,
        add_ctr_clamp=coder.add_ctr_clamp,
        ctr_clamp=coder.ctr_clamp).reshape(num_images, -1, 4)


def rpn_samples_of(batch_data_samples: List[Any]) -> List[Any]:
    """Copies of the samples with every ground truth of class 0 (the RPN's
    one class), as ``TwoStageDetector.loss`` gives its RPN."""
    import copy
    samples = copy.deepcopy(batch_data_samples)
    for sample in samples:
        sample.gt_instances.labels = torch.zeros_like(
            sample.gt_instances.labels)
    return samples


def sampled_rois(roi_head: torch.nn.Module, rpn_results_list: List[Any],
                 batch_data_samples: List[Any], x: Sequence[Tensor]
                 ) -> Tuple[Tensor, List[Any]]:
    """``StandardRoIHead.loss``'s assignment and sampling of the proposals
    per image: ``(rois, sampling_results)``."""
    from mmdet.structures.bbox import bbox2roi
    gts, ignored, _ = gt_instances_of(batch_data_samples)
    sampling_results = []
    for i, results in enumerate(rpn_results_list):
        results.priors = results.pop('bboxes')
        assigned = roi_head.bbox_assigner.assign(results, gts[i], ignored[i])
        sampling_results.append(
            roi_head.bbox_sampler.sample(
                assigned, results, gts[i],
                feats=[level[i][None] for level in x]))
    rois = bbox2roi([res.priors for res in sampling_results])
    return rois, sampling_results


def roi_losses(roi_head: torch.nn.Module, cls_score: Tensor,
               bbox_pred: Tensor, rois: Tensor, sampling_results: List[Any],
               rpn_losses: dict) -> dict:
    """The bbox head's losses (``loss_and_target``) joined with the RPN's,
    renamed as ``TwoStageDetector.loss`` renames them."""
    losses = {(f'rpn_{k}' if 'loss' in k and 'rpn' not in k else k): v
              for k, v in rpn_losses.items()}
    losses.update(
        roi_head.bbox_head.loss_and_target(
            cls_score=cls_score, bbox_pred=bbox_pred, rois=rois,
            sampling_results=sampling_results,
            rcnn_train_cfg=roi_head.train_cfg)['loss_bbox'])
    return losses


def training_proposals(rpn_head: torch.nn.Module,
                       cls_scores: Sequence[Tensor],
                       bbox_preds: Sequence[Tensor], batch_img_metas: list,
                       proposal_cfg: dict) -> List[Any]:
    """The RPN's proposals of the loss mode (``rpn_proposal`` of the train
    config: the graph keeps a config as a plain dict)."""
    from mmengine.config import ConfigDict
    return rpn_head.predict_by_feat(cls_scores, bbox_preds,
                                    batch_img_metas=batch_img_metas,
                                    cfg=ConfigDict(proposal_cfg))


def proposal_rois(rpn_results_list: List[Any]) -> Tensor:
    """``bbox2roi`` of the proposals of each image."""
    from mmdet.structures.bbox import bbox2roi
    return bbox2roi([res.bboxes for res in rpn_results_list])


def roi_predictions(roi_head: torch.nn.Module, rpn_results_list: List[Any],
                    rois: Tensor, cls_score: Tensor, bbox_pred: Tensor,
                    batch_data_samples: List[Any], rescale: bool) -> list:
    """``StandardRoIHead.predict_bbox`` after the bbox head: the outputs
    split per image and decoded with NMS, into ``DetDataSample``s."""
    from mmdet.models.detectors.base import BaseDetector
    counts = tuple(len(res) for res in rpn_results_list)
    results = roi_head.bbox_head.predict_by_feat(
        rois=rois.split(counts, 0), cls_scores=cls_score.split(counts, 0),
        bbox_preds=bbox_pred.split(counts, 0),
        batch_img_metas=img_metas_of(batch_data_samples),
        rcnn_test_cfg=roi_head.test_cfg, rescale=rescale)
    return BaseDetector.add_pred_to_datasample(None, batch_data_samples,
                                               results)


# Record calls of these as graph nodes instead of tracing into them (the
# two imported ones too: ``wrap`` patches the names of this module).
for _name in ('dense_proposals', 'rpn_samples_of', 'sampled_rois',
              'roi_losses', 'training_proposals', 'proposal_rois',
              'roi_predictions',
              'img_metas_of', 'gt_instances_of'):
    torch.fx.wrap(_name)


def _roi_features(roi_head, x, rois):
    """The RoI extractor (a leaf: RoIAlign stays float) and the bbox head
    (traced: its convs and FCs are quantized)."""
    extractor = roi_head.bbox_roi_extractor
    feats = extractor(x[:extractor.num_inputs], rois)
    return roi_head.bbox_head(feats)


def _forward(self, batch_inputs, batch_data_samples=None):
    x = self.extract_feat(batch_inputs)
    cls_scores, bbox_preds = self.rpn_head(x)
    rois = dense_proposals(self.rpn_head, cls_scores, bbox_preds,
                           batch_inputs)
    cls_score, bbox_pred = _roi_features(self.roi_head, x, rois)
    return cls_scores, bbox_preds, rois, cls_score, bbox_pred


def _predict(self, batch_inputs, batch_data_samples, rescale: bool = True):
    x = self.extract_feat(batch_inputs)
    outs = self.rpn_head(x)
    rpn_results = self.rpn_head.predict_by_feat(
        *outs, batch_img_metas=img_metas_of(batch_data_samples),
        rescale=False)
    rois = proposal_rois(rpn_results)
    cls_score, bbox_pred = _roi_features(self.roi_head, x, rois)
    return roi_predictions(self.roi_head, rpn_results, rois, cls_score,
                           bbox_pred, batch_data_samples, rescale)


def _loss(self, batch_inputs, batch_data_samples):
    x = self.extract_feat(batch_inputs)
    proposal_cfg = self.train_cfg.get('rpn_proposal', self.test_cfg.rpn)
    rpn_samples = rpn_samples_of(batch_data_samples)
    outs = self.rpn_head(x)
    # ``loss_by_feat(*outs, gts, metas, ignored gts)``; ``unpacked`` is a
    # Proxy: index it, don't unpack it.
    unpacked = gt_instances_of(rpn_samples)
    rpn_losses = self.rpn_head.loss_by_feat(*outs, unpacked[0], unpacked[2],
                                            unpacked[1])
    rpn_results = training_proposals(self.rpn_head, outs[0], outs[1],
                                     unpacked[2], proposal_cfg.to_dict())
    sampled = sampled_rois(self.roi_head, rpn_results, batch_data_samples, x)
    cls_score, bbox_pred = _roi_features(self.roi_head, x, sampled[0])
    return roi_losses(self.roi_head, cls_score, bbox_pred, sampled[0],
                      sampled[1], rpn_losses)


def check_two_stage(model: torch.nn.Module) -> None:
    """Refuse a two-stage detector these rewrites do not cover.

    Raises:
        TraceError: If its RoI head is not a bbox-only ``StandardRoIHead``
            (a mask head, a shared head, a cascade) or it has no RPN.
    """
    from mmdet.models.roi_heads import StandardRoIHead

    from ..task_modules.tracer.trace_error import TraceError
    roi_head = getattr(model, 'roi_head', None)
    reasons = []
    if not getattr(model, 'with_rpn', False):
        reasons.append('it has no rpn_head (proposals from the data '
                       'samples)')
    coder = type(getattr(getattr(model, 'rpn_head', None), 'bbox_coder',
                         None)).__name__
    if coder != 'DeltaXYWHBBoxCoder':
        reasons.append(f'its rpn_head decodes with a {coder}, not a '
                       'DeltaXYWHBBoxCoder')
    if type(roi_head) is not StandardRoIHead:
        reasons.append(f'its roi_head is a {type(roi_head).__name__}, not a '
                       'StandardRoIHead')
    elif roi_head.with_mask or roi_head.with_shared_head:
        reasons.append('its roi_head has a mask head or a shared head')
    if reasons:
        raise TraceError(
            f'{type(model).__name__} (model.roi_head, method forward): '
            + '; '.join(reasons) + '; the mmdet adapter traces Faster '
            'R-CNN-like two-stage detectors (an RPN and a bbox-only '
            'StandardRoIHead)')


@contextlib.contextmanager
def float_leaves() -> Iterator[None]:
    """mmdet's RoI extractors and mmcv's deformable convolutions are graph
    leaves meanwhile, and stay float: an extractor's level mapping and
    scatter depend on the boxes; the runtimes have no int8 RoIAlign or
    deformable convolution (both export as float ops)."""
    from mmdet.models.roi_heads.roi_extractors import BaseRoIExtractor
    classes = [BaseRoIExtractor]
    try:
        from mmcv.ops import DeformConv2d
        classes.append(DeformConv2d)
    except ImportError:  # mmcv without its ops: no deformable convolution
        pass
    saved = [(cls, cls.__dict__.get('is_fx_leaf')) for cls in classes]
    try:
        for cls, _ in saved:
            cls.is_fx_leaf = True
        yield
    finally:
        for cls, flag in saved:
            if flag is None:
                del cls.is_fx_leaf
            else:
                cls.is_fx_leaf = flag


def two_stage_rewrites() -> List[Tuple[type, str, Any]]:
    """``(class, method, replacement)`` of the three modes."""
    from mmdet.models.detectors.two_stage import TwoStageDetector
    return [(TwoStageDetector, '_forward', _forward),
            (TwoStageDetector, 'predict', _predict),
            (TwoStageDetector, 'loss', _loss)]
