"""The adapter of mmdet detectors."""
from typing import ContextManager, Tuple

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

    def tracer_rewrites(self) -> ContextManager[None]:
        """Swap mmdet's sample-looping methods for traceable ones."""
        return mmdet_rewrites()
