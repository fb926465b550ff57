"""The adapter of mmdet detectors."""
import contextlib
from typing import Any, Iterator, List, Optional, Tuple

import torch

from mmrazor_quant.registry import CODEBASES
from .base import BaseCodebase, overriding_methods
from .mmdet_detr import check_detection_transformer, detr_rewrites
from .mmdet_rewrites import mmdet_rewrites
from .mmdet_two_stage import (
    check_two_stage,
    float_leaves,
    two_stage_rewrites,
)
from .swapped_methods import swapped_methods

__all__ = ['MMDetCodebase']


@CODEBASES.register_module()
class MMDetCodebase(BaseCodebase):
    """mmdet single-stage detectors (RetinaNet, YOLOX, ...), two-stage
    ones with an RPN and a bbox-only RoI head (Faster R-CNN) and detection
    transformers (DETR, Conditional DETR, DAB-DETR: see
    :mod:`.mmdet_detr`).

    Modes: ``tensor`` returns the dense head's per-level outputs (e.g.
    ``(cls_scores, bbox_preds)``), the graph that is exported: decoding and
    NMS stay outside it, as in mmdeploy (a two-stage detector's: the RPN's
    outputs, the rois and the RoI head's outputs, see
    :mod:`.mmdet_two_stage`); ``predict`` returns
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
        """The dense heads' and DETR heads' ``loss_by_feat`` and
        ``predict_by_feat`` (box assignment or Hungarian matching, decoding
        and NMS, which read the data samples), on ``BaseDenseHead``,
        ``DETRHead`` and every head class that overrides them; and
        TOOD's ``deform_sampling`` (mmcv's deformable convolution called as
        a function: it stays float, as the ``DeformConv2d`` leaves do)."""
        try:
            from mmdet.models.dense_heads.base_dense_head import BaseDenseHead
            from mmdet.models.dense_heads.detr_head import DETRHead
        except ImportError:
            return ()
        by_feat = ('loss_by_feat', 'predict_by_feat')
        return overriding_methods(BaseDenseHead, by_feat) + \
            overriding_methods(DETRHead, by_feat) + (
                # a deformable convolution called as a function
                'mmdet.models.dense_heads.tood_head.TOODHead.deform_sampling',
            )

    def check_architecture(self, model: torch.nn.Module) -> None:
        """Also refuses the detection transformers the rewrites do not
        cover (:func:`~.mmdet_detr.check_detection_transformer`) and the
        two-stage detectors other than Faster R-CNN-like ones
        (:func:`check_two_stage`).

        Raises:
            TraceError: Naming the module and method: a detection
                transformer with a deformable attention (Deformable DETR,
                DINO) or a ``pre_transformer`` / head ``loss`` or
                ``predict`` without a rewrite; a ``TwoStageDetector`` with
                a mask, shared or cascade RoI head, or without an RPN.
        """
        super().check_architecture(model)
        from mmdet.models.detectors.base_detr import DetectionTransformer
        from mmdet.models.detectors.two_stage import TwoStageDetector
        if isinstance(model, DetectionTransformer):
            check_detection_transformer(model)
        if isinstance(model, TwoStageDetector):
            check_two_stage(model)

    def example_data_samples(self, model: torch.nn.Module,
                             inputs: torch.Tensor) -> Optional[List]:
        """The dummy samples for a two-stage detector: its bbox head runs
        on RoIs selected from them (``predict``, ``loss``) and branches on
        their features' ``dim()``."""
        from mmdet.models.detectors.two_stage import TwoStageDetector
        if isinstance(model, TwoStageDetector):
            return self.dummy_data_samples(inputs, None)
        return None

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

    @contextlib.contextmanager
    def tracer_rewrites(self) -> Iterator[None]:
        """Swap mmdet's sample-looping methods for traceable ones (those of
        the dense heads and single-stage detectors, the three modes of
        two-stage detectors and of DETRs, mmcv's attention); RoI
        extractors and deformable convolutions are float leaves."""
        with mmdet_rewrites(), swapped_methods(two_stage_rewrites()), \
                swapped_methods(detr_rewrites()), float_leaves():
            yield


def image_metainfo(h: int, w: int) -> dict:
    """The metainfo mmdet's pipeline and ``DetDataPreprocessor`` give an
    ``h x w`` image that needs no resize or padding."""
    return dict(img_shape=(h, w), ori_shape=(h, w), pad_shape=(h, w),
                batch_input_shape=(h, w), scale_factor=(1., 1.))
