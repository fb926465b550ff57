"""The adapter of mmyolo detectors."""
from typing import Any, ContextManager, List, Tuple

import torch

from mmrazor_quant.registry import CODEBASES
from .mmdet import MMDetCodebase, image_metainfo
from .mmdet_rewrites import traceable_head_loss
from .swapped_methods import swapped_methods

__all__ = ['MMYOLOCodebase']


@CODEBASES.register_module()
class MMYOLOCodebase(MMDetCodebase):
    """mmyolo detectors (``YOLODetector``: YOLOv5, RTMDet, ...).

    ``YOLODetector`` subclasses mmdet's ``SingleStageDetector``, so mmdet's
    adapter applies too (its rewrites, its detection deploy head); this one
    comes first. Modes are mmdet's: ``tensor`` returns the head's per-level
    outputs (YOLOv5: class scores, boxes, objectness; RTMDet: class scores,
    boxes), decoded outside the graph. The head's ``loss`` (overridden by
    ``YOLOv5Head`` to also take mmyolo's packed training batch) is traced
    like mmdet's, from a list of ``DetDataSample``, so the configs use
    mmdet's ``DetDataPreprocessor``; mmyolo's packed dict is refused with a
    message naming ``model.data_preprocessor``. The heads' decoding and
    losses stay out of the graphs by default (mmdet's adapter skips
    ``loss_by_feat`` and ``predict_by_feat`` of every dense head, mmyolo's
    included). Samples carry mmdet's
    metainfo plus ``batch_input_shape`` and ``pad_shape``, which the heads
    read.
    """
    packages = ('mmyolo', )
    block_types = ('CSPLayer', 'CSPLayerWithTwoConv', 'DarknetBottleneck')

    def tracer_rewrites(self) -> ContextManager[None]:
        """Trace ``YOLOv5Head.loss`` (and its subclasses') as mmdet's, and
        ``RepVGGBlock`` (PPYOLOE+) asking whether it has an ``alpha``."""
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
    return [(YOLOv5Head, 'loss', traceable_head_loss),
            (RepVGGBlock, 'forward', _repvgg_forward)]
