"""The adapter of mmyolo detectors."""
from typing import Any, ContextManager, List, Tuple

import torch
import torch.fx

from mmrazor_quant.registry import CODEBASES
from .mmdet import MMDetCodebase, image_metainfo
from .mmdet_rewrites import gt_instances_of
from .swapped_methods import swapped_methods
from .training_branches import training_branches

__all__ = ['MMYOLOCodebase']


@CODEBASES.register_module()
class MMYOLOCodebase(MMDetCodebase):
    """mmyolo detectors (``YOLODetector``: YOLOv5, RTMDet, ...).

    ``YOLODetector`` subclasses mmdet's ``SingleStageDetector``, so mmdet's
    adapter applies too (its rewrites, its detection deploy head); this one
    comes first. Modes are mmdet's: ``tensor`` returns the head's per-level
    outputs (YOLOv5: class scores, boxes, objectness; RTMDet: class scores,
    boxes), decoded outside the graph. The head's ``loss`` is traced from a
    list of ``DetDataSample`` (mmdet's ``DetDataPreprocessor``), the
    ground truths packed as mmyolo's training batch packs them
    (:func:`packed_gt_of`), the form every mmyolo head's ``loss_by_feat``
    takes; mmyolo's packed dict is refused with a message naming
    ``model.data_preprocessor``. The heads' decoding and losses stay out
    of the graphs (mmdet's adapter skips ``loss_by_feat`` and
    ``predict_by_feat`` of every dense head, mmyolo's included). Samples
    carry mmdet's metainfo plus ``batch_input_shape`` and ``pad_shape``,
    which the heads read.
    """
    packages = ('mmyolo', )
    block_types = ('CSPLayer', 'CSPLayerWithTwoConv', 'DarknetBottleneck')

    def tracer_rewrites(self) -> ContextManager[None]:
        """Trace ``YOLOv5Head.loss`` (and its subclasses') on mmyolo's
        packed targets (:func:`packed_gt_of`), and ``RepVGGBlock``
        (PPYOLOE+) asking whether it has an ``alpha``."""
        return swapped_methods(_rewrites())

    def dummy_data_samples(self, inputs: torch.Tensor,
                           tensor_outputs: Any) -> List:
        """One ``DetDataSample`` per image with a box of class ``i`` (mod
        the number of classes) over its centre quarter."""
        from mmdet.structures import DetDataSample
        from mmengine.structures import InstanceData
        h, w = inputs.shape[-2:]
        cls_scores, bbox_preds = tensor_outputs[:2]
        num_priors = bbox_preds[0].shape[1] // 4
        num_classes = cls_scores[0].shape[1] // num_priors
        samples = []
        for i in range(len(inputs)):
            sample = DetDataSample(metainfo=image_metainfo(h, w))
            sample.gt_instances = InstanceData(
                bboxes=torch.tensor([[w / 4, h / 4, 3 * w / 4, 3 * h / 4]]),
                labels=torch.tensor([i % num_classes]))
            samples.append(sample)
        return samples


def packed_gt_of(batch_data_samples: List[Any]) -> Tuple[torch.Tensor, list]:
    """The ground truths of ``DetDataSample``s as mmyolo's training batch
    packs them (``YOLOv5DetDataPreprocessor``): one ``(N, 6)`` tensor of
    rows ``(image index, label, x1, y1, x2, y2)``, and the image metas.
    Every mmyolo head's ``loss_by_feat`` takes this form (YOLOX's only
    this one)."""
    gts, _, metas = gt_instances_of(batch_data_samples)
    rows = []
    for i, gt in enumerate(gts):
        boxes = gt.bboxes.float()
        rows.append(torch.cat([
            boxes.new_full((len(boxes), 1), i),
            gt.labels.to(boxes)[:, None], boxes], dim=1))
    return torch.cat(rows), metas


# Record calls of it as one graph node instead of tracing into it.
torch.fx.wrap('packed_gt_of')


def _yolo_head_loss(self, x, batch_data_samples) -> dict:
    # YOLOv5Head.loss's packed-batch branch; the forward in its training
    # branch (YOLOv8's and PPYOLOE's distribution logits).
    with training_branches(self):
        outs = self(x)
    packed = packed_gt_of(batch_data_samples)
    return self.loss_by_feat(*outs, packed[0], packed[1])


def _repvgg_forward(self, inputs: torch.Tensor) -> torch.Tensor:
    # mmyolo's RepVGGBlock.forward (training-time branches), asking whether
    # the block has an alpha instead of the truth of the alpha parameter
    # (PPYOLOE+'s use_alpha), which a trace cannot answer.
    if hasattr(self, 'rbr_reparam'):
        return self.nonlinearity(self.se(self.rbr_reparam(inputs)))
    out = self.rbr_dense(inputs)
    branch = self.rbr_1x1(inputs)
    out = out + (branch if self.alpha is None else self.alpha * branch)
    if self.rbr_identity is not None:
        out = out + self.rbr_identity(inputs)
    return self.nonlinearity(self.se(out))


def _rewrites() -> List[Tuple[type, str, Any]]:
    from mmyolo.models.dense_heads import YOLOv5Head
    from mmyolo.models.layers.yolo_bricks import RepVGGBlock
    return [(YOLOv5Head, 'loss', _yolo_head_loss),
            (RepVGGBlock, 'forward', _repvgg_forward)]
