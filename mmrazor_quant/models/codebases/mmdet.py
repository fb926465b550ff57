"""The adapter of mmdet detectors."""
from typing import Any, ContextManager, List, Tuple

import torch

from mmrazor_quant.registry import CODEBASES
from .base import BaseCodebase, overriding_methods
from .mmdet_rewrites import mmdet_rewrites

__all__ = ['MMDetCodebase']


@CODEBASES.register_module()
class MMDetCodebase(BaseCodebase):
    """mmdet single-stage detectors (RetinaNet, YOLOX, ...).

    Modes: ``tensor`` returns the dense head's per-level outputs (e.g.
    ``(cls_scores, bbox_preds)``), the graph that is exported: decoding and
    NMS stay outside it, as in mmdeploy; ``predict`` returns
    ``DetDataSample``s with ``pred_instances``; ``loss`` a dict of losses.
    The methods that loop over data samples are rewritten during a trace
    (:func:`mmdet_rewrites`). No input size is guessed: a detector's batch
    size depends on its images (keep-ratio resize, padding), so one that
    reads shapes needs ``input_shape`` or a fixed-size test pipeline.
    """
    packages = ('mmdet', )
    task = 'detection'
    # mmdet's ResNet/MobileNetV2 blocks carry mmcls's names.
    block_types = ('BasicBlock', 'Bottleneck', 'InvertedResidual')

    @property
    def skipped_methods(self) -> Tuple[str, ...]:
        """The dense heads' ``loss_by_feat`` and ``predict_by_feat`` (box
        assignment, decoding and NMS, which read the data samples), on
        ``BaseDenseHead`` and every head class that overrides them."""
        try:
            from mmdet.models.dense_heads.base_dense_head import BaseDenseHead
        except ImportError:
            return ()
        return overriding_methods(BaseDenseHead,
                                  ('loss_by_feat', 'predict_by_feat'))

    def check_architecture(self, model: torch.nn.Module) -> None:
        """Also refuses two-stage detectors (Faster R-CNN, ...) and DETRs.

        Raises:
            TraceError: For a ``TwoStageDetector``: its RoI head reads the
                proposals that ``rpn_head.predict_by_feat`` selects by NMS,
                so no graph of this adapter goes from the image to the RoI
                head's outputs (mmdeploy exports them with its own NMS and
                RoIAlign operators). For a ``DetectionTransformer`` (DETR,
                DINO, ...): its ``pre_transformer`` asserts data samples and
                builds the padding masks in a loop over them, also in tensor
                mode, and its head (no dense head) loops over the samples in
                ``loss`` and ``predict``; this adapter has no rewrite of them.
        """
        super().check_architecture(model)
        from mmdet.models.detectors.base_detr import DetectionTransformer
        from mmdet.models.detectors.two_stage import TwoStageDetector

        from ..task_modules.tracer.trace_error import TraceError
        if isinstance(model, DetectionTransformer):
            raise TraceError(
                f'{type(model).__name__}.pre_transformer (bbox_head: '
                f'{type(model.bbox_head).__name__}): the padding masks are '
                'built from the data samples in a per-image loop, which '
                'tensor mode (the exported graph) needs too; the mmdet '
                'adapter traces dense-head detectors only')
        if isinstance(model, TwoStageDetector):
            raise TraceError(
                f'{type(model).__name__} (rpn_head: '
                f'{type(model.rpn_head).__name__}, method predict_by_feat): '
                'the RoI head runs on the proposals the RPN selects by NMS '
                'per image; the mmdet adapter traces single-stage detectors '
                'only (their graphs end at the dense head\'s outputs)')

    def dummy_data_samples(self, inputs: torch.Tensor,
                           tensor_outputs: Any) -> List:
        """One ``DetDataSample`` per image with one box of class 0 over its
        centre quarter (class 0 exists in every head, whatever the layout
        of its outputs)."""
        from mmdet.structures import DetDataSample
        from mmengine.structures import InstanceData
        h, w = inputs.shape[-2:]
        samples = []
        for _ in range(len(inputs)):
            sample = DetDataSample(metainfo=image_metainfo(h, w))
            sample.gt_instances = InstanceData(
                bboxes=torch.tensor([[w / 4, h / 4, 3 * w / 4, 3 * h / 4]]),
                labels=torch.tensor([0]))
            samples.append(sample)
        return samples

    def tracer_rewrites(self) -> ContextManager[None]:
        """Swap mmdet's sample-looping methods for traceable ones."""
        return mmdet_rewrites()


def image_metainfo(h: int, w: int) -> dict:
    """The metainfo mmdet's pipeline and ``DetDataPreprocessor`` give an
    ``h x w`` image that needs no resize or padding."""
    return dict(img_shape=(h, w), ori_shape=(h, w), pad_shape=(h, w),
                batch_input_shape=(h, w), scale_factor=(1., 1.))
