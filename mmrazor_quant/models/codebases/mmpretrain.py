"""The adapter of mmpretrain classifiers (mmcls's successor)."""
from typing import List, Optional, Sequence

import torch

from mmrazor_quant.registry import CODEBASES
from .mmcls import MMClsCodebase

__all__ = ['MMPretrainCodebase']


@CODEBASES.register_module()
class MMPretrainCodebase(MMClsCodebase):
    """mmpretrain models (``ImageClassifier`` and its parts).

    mmpretrain is mmcls renamed (``mmpretrain::`` configs, ``mmpretrain``
    scope) with the same modes, tensor outputs and blocks; what differs is
    its data sample, ``DataSample``, whose ``gt_label`` is a tensor, and
    the package of its head. The head's ``_get_loss`` and
    ``_get_predictions`` loop over data samples, so they are kept out of
    every graph by default.
    """
    packages = ('mmpretrain', )
    skipped_methods = ('mmpretrain.models.heads.ClsHead._get_loss',
                       'mmpretrain.models.heads.ClsHead._get_predictions')

    def gt_labels(self, data_samples: Sequence) -> Optional[torch.Tensor]:
        """The first ``gt_label`` of each sample (None if they have none)."""
        if not data_samples or 'gt_label' not in data_samples[0]:
            return None
        return torch.cat([s.gt_label[:1] for s in data_samples])

    def pred_scores(self, data_samples: Sequence) -> torch.Tensor:
        """``(N, num_classes)`` class scores of ``predict``'s samples."""
        return torch.stack([s.pred_score for s in data_samples])

    def dummy_data_samples(self, inputs: torch.Tensor,
                           tensor_outputs: torch.Tensor) -> List:
        """``DataSample``s labelled ``0, 1, ...`` (mod the number of
        classes, the logits' last dimension)."""
        from mmpretrain.structures import DataSample
        num_classes = tensor_outputs.shape[-1]
        return [DataSample().set_gt_label(i % num_classes)
                for i in range(len(inputs))]
