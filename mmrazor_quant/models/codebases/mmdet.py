"""The adapter of mmdet detectors."""
from typing import ContextManager

from mmrazor_quant.registry import CODEBASES
from .base import BaseCodebase
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

    def tracer_rewrites(self) -> ContextManager[None]:
        """Swap mmdet's sample-looping methods for traceable ones."""
        return mmdet_rewrites()
