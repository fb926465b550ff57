"""The pose deploy head: a top-down pose estimator's export ends at its
head's outputs (SimCC vectors or heatmaps; decoding to keypoints stays
outside the graph, as in mmdeploy); parity compares them and the keypoints
both decode to."""
from typing import Sequence

import numpy as np
from torch import Tensor, nn

from mmrazor_quant.registry import DEPLOY_HEADS
from .deploy_heads import BaseDeployHead
from .parity import Agreement

__all__ = ['decode_keypoints', 'PoseDeployHead', 'KEYPOINT_TOL']

#: Keypoints this close (input pixels) count as reproduced: a flat heatmap
#: or SimCC vector can put an arg-max tie elsewhere.
KEYPOINT_TOL = 0.5


def decode_keypoints(head: nn.Module,
                     outputs: Sequence[Tensor]) -> np.ndarray:
    """Keypoints ``(N, K, 2)`` in input pixels, decoded by the head's own
    codec (``head.decode``) from its raw outputs.

    Args:
        head (nn.Module): An mmpose head with a ``decoder``.
        outputs (Sequence[Tensor]): Its outputs as a list: ``[heatmaps]`` or
            ``[pred_x, pred_y]``.

    Returns:
        np.ndarray: The first instance's keypoints of each sample.
    """
    batch = outputs[0] if len(outputs) == 1 else tuple(outputs)
    instances = head.decode(batch)
    return np.stack([np.asarray(i.keypoints)[0] for i in instances])


@DEPLOY_HEADS.register_module(name='pose')
class PoseDeployHead(BaseDeployHead):
    """Top-down pose estimators (the ``pose`` task): every head output
    compared, and the keypoints both decode to with the head's own codec:
    the share within :data:`KEYPOINT_TOL` pixels, and the mean and largest
    distance (``details``)."""
    task = 'pose'

    def check_model(self, qmodel: nn.Module) -> None:
        head = getattr(qmodel.architecture, 'head', None)
        if getattr(head, 'decoder', None) is None:
            raise ValueError(
                f'{type(qmodel.architecture).__name__}: the pose deploy head '
                'needs a head with a codec (`head.decoder`) to decode '
                'keypoints')

    def summarise(self, qmodel, sim, runtime, inputs, data_samples):
        head = qmodel.architecture.head
        dist = np.linalg.norm(
            decode_keypoints(head, sim) - decode_keypoints(head, runtime),
            axis=-1)
        return Agreement(
            float((dist <= KEYPOINT_TOL).mean()), 'keypoints',
            details=dict(mean_keypoint_px=float(dist.mean()),
                         max_keypoint_px=float(dist.max())))
