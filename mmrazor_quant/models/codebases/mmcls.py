"""The adapter of mmcls classifiers."""
from typing import List, Optional, Sequence

import torch

from mmrazor_quant.registry import CODEBASES
from .base import BaseCodebase

__all__ = ['MMClsCodebase']


@CODEBASES.register_module()
class MMClsCodebase(BaseCodebase):
    """mmcls models (``ImageClassifier`` and its parts).

    Modes: ``tensor`` returns the head's logits ``(N, num_classes)``,
    ``predict`` a ``ClsDataSample`` per image (``pred_label.score`` is the
    softmax of the logits), ``loss`` a dict of losses; data samples are
    ``ClsDataSample`` with ``gt_label``. The head's ``_get_loss`` and
    ``_get_predictions`` loop over data samples, so they are kept out of
    every graph by default (MMRazor's configs list them in
    ``skipped_methods``, which still works). Without a size in the test
    pipeline or the backbone, models are traced at ImageNet's 224 x 224.
    """
    packages = ('mmcls', )
    skipped_methods = ('mmcls.models.heads.ClsHead._get_loss',
                       'mmcls.models.heads.ClsHead._get_predictions')
    task = 'classification'
    default_input_hw = (224, 224)
    block_types = ('BasicBlock', 'Bottleneck', 'InvertedResidual')

    def gt_labels(self, data_samples: Sequence) -> Optional[torch.Tensor]:
        """The first ``gt_label`` of each sample (None if they have none)."""
        if not data_samples or not hasattr(data_samples[0], 'gt_label'):
            return None
        return torch.cat([s.gt_label.label[:1] for s in data_samples])

    def pred_scores(self, data_samples: Sequence) -> torch.Tensor:
        """``(N, num_classes)`` class scores of ``predict``'s samples."""
        return torch.stack([s.pred_label.score for s in data_samples])

    def dummy_data_samples(self, inputs: torch.Tensor,
                           tensor_outputs: torch.Tensor) -> List:
        """``ClsDataSample``s labelled ``0, 1, ...`` (mod the number of
        classes, the logits' last dimension)."""
        from mmcls.structures import ClsDataSample
        num_classes = tensor_outputs.shape[-1]
        return [ClsDataSample().set_gt_label(i % num_classes)
                for i in range(len(inputs))]
