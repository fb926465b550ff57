"""Traceable stand-ins for mmdet code that loops over data samples.

mmdet's single-stage detectors and dense heads iterate over
``batch_data_samples`` (a list at run time, one ``Proxy`` under ``torch.fx``)
to collect image metas and ground truths and to attach predictions. During a
trace, :func:`mmdet_rewrites` swaps those methods for versions that move the
loops into the functions below, which ``torch.fx.wrap`` records as single
``call_function`` nodes; the graph then runs the real loops at run time.
Everything else (the head's ``forward``, and ``predict_by_feat`` /
``loss_by_feat`` when skipped, as MMRazor's configs do) is untouched.
"""
from typing import Any, ContextManager, List, Tuple

import torch.fx

from .swapped_methods import swapped_methods
from .training_branches import training_branches

__all__ = ['mmdet_rewrites', 'traceable_head_loss']


def img_metas_of(batch_data_samples: List[Any]) -> List[dict]:
    """The ``metainfo`` of each data sample."""
    return [sample.metainfo for sample in batch_data_samples]


def gt_instances_of(batch_data_samples: List[Any]) -> Tuple[list, list, list]:
    """mmdet's ``unpack_gt_instances``: (gts, ignored gts, image metas).

    Raises:
        TypeError: If the samples are not a list (e.g. the dict that
            mmyolo's ``YOLOv5DetDataPreprocessor`` packs for training) or
            one has no ``gt_instances``.
    """
    if not isinstance(batch_data_samples, (list, tuple)):
        raise TypeError(
            'the loss needs a list of DetDataSample, got '
            f'{type(batch_data_samples).__name__} (mmyolo\'s '
            'YOLOv5DetDataPreprocessor packs the training boxes into a '
            'dict: set model.data_preprocessor to mmdet.DetDataPreprocessor)')
    for sample in batch_data_samples:
        if not hasattr(sample, 'gt_instances'):
            raise TypeError(
                f'{type(sample).__name__} has no gt_instances: the loss '
                'needs DetDataSample with gt_instances (boxes and labels)')
    from mmdet.models.utils import unpack_gt_instances
    return unpack_gt_instances(batch_data_samples)


def add_predictions(batch_data_samples: List[Any],
                    results_list: List[Any]) -> List[Any]:
    """mmdet's ``BaseDetector.add_pred_to_datasample`` (it uses no state)."""
    from mmdet.models.detectors.base import BaseDetector
    return BaseDetector.add_pred_to_datasample(None, batch_data_samples,
                                               results_list)


# Record calls of these as graph nodes instead of tracing into them.
torch.fx.wrap('img_metas_of')
torch.fx.wrap('gt_instances_of')
torch.fx.wrap('add_predictions')


def _head_predict(self, x, batch_data_samples, rescale: bool = False):
    outs = self(x)
    return self.predict_by_feat(
        *outs, batch_img_metas=img_metas_of(batch_data_samples),
        rescale=rescale)


def traceable_head_loss(self, x, batch_data_samples):
    """A dense head's ``loss`` with the ground truths unpacked in one
    graph call, its ``forward`` traced in its training branch (YOLOv8's
    and PPYOLOE's heads add their distribution logits only in training,
    which their ``loss_by_feat`` takes)."""
    with training_branches(self):
        outs = self(x)
    unpacked = gt_instances_of(batch_data_samples)
    # ``loss_by_feat(*outs, gts, metas, ignored gts)``; index, don't unpack:
    # ``unpacked`` is a Proxy and cannot be iterated.
    return self.loss_by_feat(*outs, unpacked[0], unpacked[2], unpacked[1])


def _detector_predict(self, batch_inputs, batch_data_samples,
                      rescale: bool = True):
    x = self.extract_feat(batch_inputs)
    results_list = self.bbox_head.predict(
        x, batch_data_samples, rescale=rescale)
    return add_predictions(batch_data_samples, results_list)


def _detector_forward(self, batch_inputs, batch_data_samples=None):
    # ``bbox_head(x)``, not mmdet's ``bbox_head.forward(x)``: called as a
    # module, the head's ops get its scope in every mode, so a fake quant
    # on one of them (VFNet's ``bbox_pred * stride``) has the same name in
    # the tensor graph that calibrates it as in predict and loss
    return self.bbox_head(self.extract_feat(batch_inputs))


def _tood_level_outputs(head, x, idx: int, scale, stride):
    """One level of ``TOODHead.forward``: ``(cls_score, bbox_pred)``."""
    import torch
    import torch.nn.functional as F
    from mmdet.models.dense_heads.tood_head import sigmoid_geometric_mean
    from mmdet.structures.bbox import distance2bbox
    b, _, h, w = x.shape
    # the level's anchors once per image, by ``repeat``: mmdet concatenates
    # ``b`` copies in a Python loop, which would fix the traced batch size
    anchor = head.prior_generator.single_level_grid_priors(
        (h, w), idx, device=x.device).repeat(b, 1)
    inter_feats = []
    for inter_conv in head.inter_convs:
        x = inter_conv(x)
        inter_feats.append(x)
    feat = torch.cat(inter_feats, 1)
    avg_feat = F.adaptive_avg_pool2d(feat, (1, 1))
    cls_feat = head.cls_decomp(feat, avg_feat)
    reg_feat = head.reg_decomp(feat, avg_feat)
    cls_score = sigmoid_geometric_mean(head.tood_cls(cls_feat),
                                       head.cls_prob_module(feat))
    if head.anchor_type == 'anchor_free':
        dist = scale(head.tood_reg(reg_feat).exp()).float()
        dist = dist.permute(0, 2, 3, 1).reshape(-1, 4)
        boxes = distance2bbox(head.anchor_center(anchor) / stride[0], dist)
    else:
        dist = scale(head.tood_reg(reg_feat)).float()
        dist = dist.permute(0, 2, 3, 1).reshape(-1, 4)
        boxes = head.bbox_coder.decode(anchor, dist) / stride[0]
    reg_bbox = boxes.reshape(b, h, w, 4).permute(0, 3, 1, 2)
    bbox_pred = head.deform_sampling(reg_bbox.contiguous(),
                                     head.reg_offset_module(feat).contiguous())
    # a sampled box with its corners swapped falls back to the unsampled
    # one (mmdet: it would make the GIoU loss negative)
    invalid = (bbox_pred[:, [0]] > bbox_pred[:, [2]]) | \
        (bbox_pred[:, [1]] > bbox_pred[:, [3]])
    bbox_pred = torch.where(invalid.expand_as(bbox_pred), reg_bbox, bbox_pred)
    return cls_score, bbox_pred


def _tood_forward(self, feats):
    """``TOODHead.forward`` with the batch size left symbolic."""
    outs = [
        _tood_level_outputs(self, x, idx, scale, stride)
        for idx, (x, scale, stride) in enumerate(
            zip(feats, self.scales, self.prior_generator.strides))
    ]
    return (tuple(o[0] for o in outs), tuple(o[1] for o in outs))


def _rewrites() -> List[Tuple[type, str, Any]]:
    try:
        from mmdet.models.dense_heads.base_dense_head import BaseDenseHead
        from mmdet.models.detectors.single_stage import SingleStageDetector
    except ImportError:  # no mmdet: nothing to rewrite
        return []
    try:
        from mmdet.models.dense_heads.tood_head import TOODHead
        tood = [(TOODHead, 'forward', _tood_forward)]
    except ImportError:  # mmcv without its ops (deform_conv2d)
        tood = []
    return [(BaseDenseHead, 'predict', _head_predict),
            (BaseDenseHead, 'loss', traceable_head_loss),
            (SingleStageDetector, 'predict', _detector_predict),
            (SingleStageDetector, '_forward', _detector_forward)] + tood


def mmdet_rewrites() -> ContextManager[None]:
    """Swap mmdet's sample-looping methods for traceable ones meanwhile."""
    return swapped_methods(_rewrites())
