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


def _rewrites() -> List[Tuple[type, str, Any]]:
    try:
        from mmdet.models.dense_heads.base_dense_head import BaseDenseHead
        from mmdet.models.detectors.single_stage import SingleStageDetector
    except ImportError:  # no mmdet: nothing to rewrite
        return []
    return [(BaseDenseHead, 'predict', _head_predict),
            (BaseDenseHead, 'loss', traceable_head_loss),
            (SingleStageDetector, 'predict', _detector_predict),
            (SingleStageDetector, '_forward', _detector_forward)]


def mmdet_rewrites() -> ContextManager[None]:
    """Swap mmdet's sample-looping methods for traceable ones meanwhile."""
    return swapped_methods(_rewrites())
