"""The adapter of mmseg segmentors."""
from typing import ContextManager, List, Tuple

import torch

from mmrazor_quant.registry import CODEBASES
from .base import BaseCodebase, overriding_methods
from .mmseg_rewrites import mmseg_rewrites

__all__ = ['MMSegCodebase', 'edge_map']


@CODEBASES.register_module()
class MMSegCodebase(BaseCodebase):
    """mmseg segmentors (``EncoderDecoder``: FCN, DeepLabV3+, Fast-SCNN,
    SegFormer, ...).

    Modes: ``tensor`` returns the decode head's logits ``(N, num_classes,
    H / s, W / s)`` at the head's stride ``s``, the graph that is exported:
    the resize to the image and the argmax stay outside it, as in mmdeploy;
    ``predict`` returns ``SegDataSample``s with ``pred_sem_seg`` and
    ``seg_logits``; ``loss`` a dict of losses (``decode.loss_ce``,
    ``aux_0.loss_ce``, ...) from ``SegDataSample``s with ``gt_sem_seg``.
    The segmentor's loops over data samples are rewritten during a trace
    (:func:`mmseg_rewrites`) and the heads' ``loss_by_feat`` and
    ``predict_by_feat`` are kept out of the graphs. Without a fixed size in
    the test pipeline, models are traced at 512 x 512 (mmseg's ADE20K
    crop).
    """
    packages = ('mmseg', )
    task = 'segmentation'
    default_input_hw = (512, 512)
    #: The heads' methods that read data samples (kept out of the graphs
    #: on every head class that defines its own, see
    #: :attr:`skipped_methods`).
    head_methods = ('loss_by_feat', 'predict_by_feat')

    # mmseg's ResNets use mmseg's blocks; MiT's layers are one unit each.
    block_types = ('BasicBlock', 'Bottleneck', 'InvertedResidual',
                   'TransformerEncoderLayer')

    @property
    def skipped_methods(self) -> Tuple[str, ...]:
        """``loss_by_feat`` and ``predict_by_feat`` of ``BaseDecodeHead``
        and of every head class that overrides them (STDC's detail loss,
        DDRNet's and PIDNet's multi-output losses stack the ground truths
        themselves)."""
        try:
            from mmseg.models.decode_heads.decode_head import BaseDecodeHead
        except ImportError:
            return ()
        return overriding_methods(BaseDecodeHead, self.head_methods)

    def tracer_rewrites(self) -> ContextManager[None]:
        """Swap ``EncoderDecoder``'s sample-looping methods for traceable
        ones."""
        return mmseg_rewrites()

    def dummy_data_samples(self, inputs: torch.Tensor,
                           tensor_outputs: torch.Tensor) -> List:
        """``SegDataSample``s whose ``gt_sem_seg`` is the image cut into
        vertical stripes labelled ``0, 1, ...`` (mod the number of classes,
        the logits' channel dimension), and whose ``gt_edge_map`` marks the
        pixels beside a stripe border, as mmseg's ``GenerateEdge`` does for
        the heads with a boundary loss (PIDNet)."""
        from mmengine.structures import PixelData
        from mmseg.structures import SegDataSample
        logits = tensor_outputs[0] if isinstance(
            tensor_outputs, (list, tuple)) else tensor_outputs
        num_classes = logits.shape[1]
        h, w = inputs.shape[-2:]
        stripes = torch.arange(w) * num_classes // w
        label = stripes.expand(h, w).clone()[None]
        samples = []
        for _ in range(len(inputs)):
            sample = SegDataSample(metainfo=dict(
                img_shape=(h, w), ori_shape=(h, w), pad_shape=(h, w)))
            sample.gt_sem_seg = PixelData(data=label.clone())
            sample.gt_edge_map = PixelData(data=edge_map(label))
            samples.append(sample)
        return samples



def edge_map(label: torch.Tensor, width: int = 3) -> torch.Tensor:
    """``(1, H, W)`` uint8: 1 within ``width // 2`` pixels of a change of
    ``label`` ``(1, H, W)`` along a row or a column (mmseg's
    ``GenerateEdge`` with its default width 3), 0 elsewhere."""
    edge = torch.zeros_like(label, dtype=torch.bool)
    change_w = label[..., 1:] != label[..., :-1]
    change_h = label[..., 1:, :] != label[..., :-1, :]
    edge[..., 1:] |= change_w
    edge[..., :-1] |= change_w
    edge[..., 1:, :] |= change_h
    edge[..., :-1, :] |= change_h
    grown = torch.nn.functional.max_pool2d(
        edge[None].float(), width, stride=1, padding=width // 2)[0]
    return grown.to(torch.uint8)
