"""The segmentation deploy head: a segmentor's export ends at its decode
head's logits ``(N, C, H / s, W / s)``; the resize to the image and the
per-pixel argmax stay outside it, as in mmdeploy (:func:`seg_labels`).
Parity compares the logits and the label maps both give."""
import torch.nn.functional as F
from torch import Tensor, nn

from mmrazor_quant.registry import DEPLOY_HEADS
from .deploy_heads import BaseDeployHead
from .parity import Agreement

__all__ = ['seg_labels', 'SegmentationDeployHead']


def seg_labels(logits: Tensor, size, align_corners: bool = False) -> Tensor:
    """The post-processing outside the exported graph: logits ``(N, C, h,
    w)`` resized (bilinear) to ``size`` ``(H, W)`` and argmaxed into
    ``(N, H, W)`` class indices."""
    logits = F.interpolate(logits.float(), size=tuple(size), mode='bilinear',
                           align_corners=align_corners)
    return logits.argmax(1)


@DEPLOY_HEADS.register_module(name='segmentation')
class SegmentationDeployHead(BaseDeployHead):
    """Segmentors (the ``segmentation`` task): the logits compared, and
    the share of image pixels whose label (the argmax of the logits resized
    to the image) is the same."""
    task = 'segmentation'

    def check_model(self, qmodel: nn.Module) -> None:
        architecture = getattr(qmodel, 'architecture', qmodel)
        if not hasattr(architecture, 'decode_head'):
            raise ValueError(
                f'{type(architecture).__name__}: the segmentation deploy '
                'head needs a segmentor with a decode_head')

    def summarise(self, qmodel, sim, runtime, inputs, data_samples):
        architecture = getattr(qmodel, 'architecture', qmodel)
        align_corners = bool(getattr(architecture, 'align_corners', False))
        size = inputs.shape[-2:]
        same = seg_labels(sim[0], size, align_corners) == seg_labels(
            runtime[0], size, align_corners)
        return Agreement(float(same.float().mean()), 'pixel label')
