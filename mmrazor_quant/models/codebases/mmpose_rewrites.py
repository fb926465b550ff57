"""Traceable stand-ins for mmpose code that loops over data samples.

mmpose's top-down estimator and heads iterate over ``batch_data_samples``
(one ``Proxy`` under ``torch.fx``) to stack the training targets and to
attach predictions, and compute the training accuracy in numpy. During a
trace, :func:`mmpose_rewrites` swaps those methods for versions that move
this work into the functions below, which ``torch.fx.wrap`` records as
single ``call_function`` nodes; the graph then runs the real code at run
time. The estimator's ``forward`` gets a default for ``data_samples``
(None), so that every graph runs without data samples. The heads'
``forward`` stays traced (it is what gets quantized); their ``decode`` and
their loss modules are skipped methods of the adapter.
"""
from types import SimpleNamespace
from typing import Any, ContextManager, List, Tuple

import torch
import torch.fx

from .swapped_methods import swapped_methods

__all__ = ['mmpose_rewrites']


def simcc_targets_of(batch_data_samples: List[Any]) -> Tuple[torch.Tensor,
                                                             ...]:
    """``(x labels, y labels, keypoint weights)`` of a batch, stacked as
    ``RTMCCHead.loss`` stacks them."""
    labels = [d.gt_instance_labels for d in batch_data_samples]
    return (torch.cat([lb.keypoint_x_labels for lb in labels]),
            torch.cat([lb.keypoint_y_labels for lb in labels]),
            torch.cat([lb.keypoint_weights for lb in labels]))


def heatmap_targets_of(batch_data_samples: List[Any]) -> Tuple[torch.Tensor,
                                                               ...]:
    """``(heatmaps, keypoint weights)`` of a batch, stacked as
    ``HeatmapHead.loss`` stacks them."""
    return (torch.stack([d.gt_fields.heatmaps for d in batch_data_samples]),
            torch.cat([d.gt_instance_labels.keypoint_weights
                       for d in batch_data_samples]))


def simcc_accuracy(pred_x: torch.Tensor, pred_y: torch.Tensor,
                   gt_x: torch.Tensor, gt_y: torch.Tensor,
                   weights: torch.Tensor,
                   simcc_split_ratio: float) -> torch.Tensor:
    """mmpose's ``simcc_pck_accuracy`` of a batch, as a tensor."""
    from mmpose.evaluation.functional import simcc_pck_accuracy
    _, acc, _ = simcc_pck_accuracy(
        output=(pred_x.detach().cpu().numpy(), pred_y.detach().cpu().numpy()),
        target=(gt_x.cpu().numpy(), gt_y.cpu().numpy()),
        simcc_split_ratio=simcc_split_ratio,
        mask=weights.cpu().numpy() > 0)
    return torch.tensor(acc, device=gt_x.device)


def heatmap_accuracy(pred: torch.Tensor, gt: torch.Tensor,
                     weights: torch.Tensor) -> torch.Tensor:
    """mmpose's ``pose_pck_accuracy`` of a batch, as a tensor."""
    from mmpose.evaluation.functional import pose_pck_accuracy
    _, acc, _ = pose_pck_accuracy(
        output=pred.detach().cpu().numpy(), target=gt.cpu().numpy(),
        mask=weights.cpu().numpy() > 0)
    return torch.tensor(acc, device=gt.device)


def add_pose_predictions(batch_pred_instances: List[Any],
                         batch_data_samples: List[Any],
                         test_cfg: dict) -> List[Any]:
    """mmpose's ``TopdownPoseEstimator.add_pred_to_datasample`` (it reads
    only ``test_cfg`` of the estimator)."""
    from mmpose.models.pose_estimators import TopdownPoseEstimator
    return TopdownPoseEstimator.add_pred_to_datasample(
        SimpleNamespace(test_cfg=test_cfg), batch_pred_instances, None,
        batch_data_samples)


# Record calls of these as graph nodes instead of tracing into them.
for _name in ('simcc_targets_of', 'heatmap_targets_of', 'simcc_accuracy',
              'heatmap_accuracy', 'add_pose_predictions'):
    torch.fx.wrap(_name)


def _simcc_loss(self, feats, batch_data_samples, train_cfg={}):
    pred_x, pred_y = self.forward(feats)
    # Index, don't unpack: the targets are one Proxy.
    targets = simcc_targets_of(batch_data_samples)
    loss = self.loss_module((pred_x, pred_y), (targets[0], targets[1]),
                            targets[2])
    acc = simcc_accuracy(pred_x, pred_y, targets[0], targets[1], targets[2],
                         self.simcc_split_ratio)
    return dict(loss_kpt=loss, acc_pose=acc)


def _heatmap_loss(self, feats, batch_data_samples, train_cfg={}):
    pred = self.forward(feats)
    targets = heatmap_targets_of(batch_data_samples)
    losses = dict(loss_kpt=self.loss_module(pred, targets[0], targets[1]))
    if train_cfg.get('compute_acc', True):
        losses['acc_pose'] = heatmap_accuracy(pred, targets[0], targets[1])
    return losses


def _estimator_predict(self, inputs, data_samples):
    if self.test_cfg.get('flip_test', False):
        raise ValueError(
            f'{type(self).__name__}: test_cfg.flip_test=True runs the head '
            'twice on mirrored features and cannot be traced; set '
            'model.test_cfg.flip_test=False for a quantized model')
    feats = self.extract_feat(inputs)
    preds = self.head.predict(feats, data_samples, test_cfg=self.test_cfg)
    return add_pose_predictions(preds, data_samples, dict(self.test_cfg))


def _estimator_forward(self, inputs, data_samples=None, mode='tensor'):
    # mmpose's own forward with the default for ``data_samples`` that it
    # lacks, so that the traced graphs (and the exported deploy model) run
    # as ``gm(inputs)``.
    from mmpose.models.pose_estimators.base import BasePoseEstimator
    return _ORIGINAL_FORWARD[BasePoseEstimator](self, inputs, data_samples,
                                                mode)


_ORIGINAL_FORWARD = {}


def _rewrites() -> List[Tuple[type, str, Any]]:
    try:
        from mmpose.models.heads import HeatmapHead, RTMCCHead
        from mmpose.models.pose_estimators import TopdownPoseEstimator
        from mmpose.models.pose_estimators.base import BasePoseEstimator
    except ImportError:  # no mmpose: nothing to rewrite
        return []
    _ORIGINAL_FORWARD.setdefault(BasePoseEstimator,
                                 BasePoseEstimator.__dict__['forward'])
    return [(BasePoseEstimator, 'forward', _estimator_forward),
            (RTMCCHead, 'loss', _simcc_loss),
            (HeatmapHead, 'loss', _heatmap_loss),
            (TopdownPoseEstimator, 'predict', _estimator_predict)]


def mmpose_rewrites() -> ContextManager[None]:
    """Swap mmpose's sample-looping methods for traceable ones meanwhile."""
    return swapped_methods(_rewrites())
