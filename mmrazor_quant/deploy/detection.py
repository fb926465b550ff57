"""The detection deploy head: a detector's export ends at its dense head's
per-level outputs (post-processing stays outside, as in mmdeploy); parity
compares them and the boxes both decode to."""
from typing import List

import torch
from torch import Tensor, nn

from mmrazor_quant.registry import DEPLOY_HEADS
from .deploy_heads import BaseDeployHead
from .parity import Agreement

__all__ = [
    'is_detector', 'is_detection_transformer', 'DetectionDeployHead',
    'BOX_CORNER_TOL'
]


def is_detector(qmodel: nn.Module) -> bool:
    """Whether ``qmodel`` wraps a dense-head detector (its export ends at
    the head's per-level outputs; parity is checked on them and on the
    decoded boxes) or a two-stage one (:func:`is_two_stage`)."""
    architecture = getattr(qmodel, 'architecture', None)
    head = getattr(architecture, 'bbox_head', None)
    return (head is not None and hasattr(head, 'prior_generator')
            or is_two_stage(qmodel) or is_detection_transformer(qmodel))


def is_detection_transformer(qmodel: nn.Module) -> bool:
    """Whether ``qmodel`` wraps an mmdet ``DetectionTransformer`` (DETR):
    its export ends at the head's outputs of every decoder layer."""
    try:
        from mmdet.models.detectors.base_detr import DetectionTransformer
    except ImportError:
        return False
    return isinstance(getattr(qmodel, 'architecture', None),
                      DetectionTransformer)


def is_two_stage(qmodel: nn.Module) -> bool:
    """Whether ``qmodel`` wraps a detector with an RPN and a RoI head (its
    export ends at ``(rpn cls scores, rpn bbox preds, rois, cls_score,
    bbox_pred)``)."""
    architecture = getattr(qmodel, 'architecture', None)
    return (getattr(architecture, 'rpn_head', None) is not None
            and getattr(architecture, 'roi_head', None) is not None)


def _decode_two_stage(architecture: nn.Module, flat: List[Tensor],
                      metas: List[dict], rescale: bool = False):
    """The RoI head's boxes of each image: its outputs follow the RPN's two
    per-level groups; every image has as many rois (no NMS in the graph)."""
    roi_head = architecture.roi_head
    num_levels = len(architecture.rpn_head.prior_generator.strides)
    rois, cls_score, bbox_pred = flat[2 * num_levels:]
    per_image = [len(rois) // len(metas)] * len(metas)
    return roi_head.bbox_head.predict_by_feat(
        rois=rois.split(per_image), cls_scores=cls_score.split(per_image),
        bbox_preds=bbox_pred.split(per_image), batch_img_metas=metas,
        rcnn_test_cfg=roi_head.test_cfg, rescale=rescale)


def _decoded(qmodel: nn.Module, flat: List[Tensor], metas: List[dict],
             rescale: bool = False):
    architecture = qmodel.architecture
    if is_two_stage(qmodel):
        return _decode_two_stage(architecture, flat, metas, rescale)
    head = architecture.bbox_head
    if is_detection_transformer(qmodel):  # the last layer's queries
        return head.predict_by_feat(*flat, batch_img_metas=metas,
                                    rescale=rescale)
    return _decode(head, flat, len(head.prior_generator.strides), metas,
                   rescale)


def _decode(head: nn.Module, flat: List[Tensor], num_levels: int,
            metas: List[dict], rescale: bool = False):
    groups = [flat[i:i + num_levels] for i in range(0, len(flat),
                                                      num_levels)]
    return head.predict_by_feat(*groups, batch_img_metas=metas,
                                rescale=rescale)


#: Corners this close (pixels) make a box reproduced even where its IoU
#: is undefined: a low-score box of an unused level can have zero area.
BOX_CORNER_TOL = 0.5


def _box_agreement(sim, rt) -> float:
    from mmdet.structures.bbox import bbox_overlaps
    matched = total = 0
    for s, r in zip(sim, rt):
        total += len(s.bboxes)
        if len(s.bboxes) == 0 or len(r.bboxes) == 0:
            continue
        iou = bbox_overlaps(s.bboxes, r.bboxes)
        corners = (s.bboxes[:, None] - r.bboxes[None]).abs().amax(-1)
        close = (iou >= 0.9) | (corners <= BOX_CORNER_TOL)
        same = s.labels[:, None] == r.labels[None, :]
        matched += int((close & same).any(1).sum())
    return matched / total if total else 1.0


@DEPLOY_HEADS.register_module(name='detection')
class DetectionDeployHead(BaseDeployHead):
    """Dense-head, two-stage and DETR detectors (the ``detection`` task):
    every head output compared (a two-stage detector's RPN outputs, its
    rois and its RoI head's outputs; a DETR's class scores and boxes of
    every decoder layer), and the boxes both decode to with the
    detector's own head
    (same label, and IoU >= 0.9 or every corner within
    :data:`BOX_CORNER_TOL` pixels: the share of the simulation's boxes the
    runtime reproduces)."""
    task = 'detection'

    def check_model(self, qmodel: nn.Module) -> None:
        if not is_detector(qmodel):
            raise ValueError(
                f'{type(qmodel.architecture).__name__}: the detection '
                'deploy head needs a dense head (bbox_head with a '
                'prior_generator), an rpn_head and a roi_head, or a '
                'DetectionTransformer')

    def summarise(self, qmodel, sim, runtime, inputs, data_samples):
        h, w = inputs.shape[-2:]
        # mmyolo's heads also read ori_shape (they decode without
        # rescaling)
        metas = [dict(img_shape=(h, w), ori_shape=(h, w),
                      scale_factor=(1., 1.))] * len(inputs)
        with torch.no_grad():
            boxes_sim = _decoded(qmodel, sim, metas)
            boxes_rt = _decoded(qmodel, runtime, metas)
        return Agreement(_box_agreement(boxes_sim, boxes_rt), 'boxes')

    def predictions(self, qmodel, outputs, inputs, data_samples):
        """The boxes in the original image's coordinates, as the detector's
        ``predict`` mode writes them (``pred_instances``)."""
        with torch.no_grad():
            results = _decoded(qmodel, outputs,
                               [s.metainfo for s in data_samples],
                               rescale=True)
        for sample, result in zip(data_samples, results):
            sample.pred_instances = result
        return data_samples
