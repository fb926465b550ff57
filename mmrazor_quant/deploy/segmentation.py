"""The segmentation deploy head: parity of an exported segmentor's logits
with the simulation.

The exported graph ends at the decode head's logits ``(N, C, H / s,
W / s)``; the resize to the image and the per-pixel argmax stay outside
it, as in mmdeploy (:func:`seg_labels`). Parity compares the logits (SQNR)
and the label maps both give.
"""
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn

from mmrazor_quant.registry import DEPLOY_HEADS
from mmrazor_quant.utils.sqnr import sqnr_db
from .deploy_heads import BaseDeployHead
from .int8_saturation import SATURATION_NOTE, int8_pairs_saturate
from .parity import runs_int8_kernels
from .runtime_arithmetic import runtime_arithmetic
from .runtimes import load_runtime

__all__ = [
    'SegmentationParity', 'seg_labels', 'check_segmentation_parity',
    'SegmentationDeployHead'
]


@dataclass
class SegmentationParity:
    """Agreement of a runtime's logits and label maps with the simulation.

    Attributes:
        runtime (str): A registered runtime (see :mod:`.runtimes`).
        num_images (int): Images compared.
        sqnr_db (float): SQNR of the runtime's logits against the
            simulation's (dB).
        pixel_agreement (float): Fraction of image pixels whose label (the
            argmax of the logits resized to the image) is the same.
        int8_saturates (bool): The runtime ran int8 kernels on a CPU whose
            u8 x s8 products saturate (no VNNI).
    """
    runtime: str
    num_images: int
    sqnr_db: float
    pixel_agreement: float
    int8_saturates: bool = False

    def format(self) -> str:
        """One line for a log (two on a saturating CPU)."""
        line = (f'{self.runtime} vs simulation on {self.num_images} images: '
                f'logits SQNR {self.sqnr_db:.1f} dB, '
                f'{100 * self.pixel_agreement:.2f}% of the pixels labelled '
                'the same')
        return line + (f'\n  note: {SATURATION_NOTE}'
                       if self.int8_saturates else '')


def seg_labels(logits: Tensor, size, align_corners: bool = False) -> Tensor:
    """The post-processing outside the exported graph: logits ``(N, C, h,
    w)`` resized (bilinear) to ``size`` ``(H, W)`` and argmaxed into
    ``(N, H, W)`` class indices."""
    logits = F.interpolate(logits.float(), size=tuple(size), mode='bilinear',
                           align_corners=align_corners)
    return logits.argmax(1)


@torch.no_grad()
def check_segmentation_parity(deploy_model: nn.Module, onnx_path: str,
                              inputs: Tensor, runtime: str = 'onnxruntime',
                              align_corners: bool = False,
                              **runtime_options) -> SegmentationParity:
    """Run ``onnx_path`` in ``runtime`` and the deploy model on ``inputs``.

    Args:
        deploy_model (nn.Module): The simulation (what was exported).
        onnx_path (str): Its export (the decode head's logits).
        inputs (Tensor): A preprocessed batch ``(N, 3, H, W)``.
        runtime (str): A registered runtime (see :mod:`.runtimes`).
        align_corners (bool): The segmentor's resize setting.
        **runtime_options: Passed to the runtime loader.

    Returns:
        SegmentationParity: Logits SQNR and label agreement.

    Raises:
        ValueError: If the file's output does not have the simulation's
            shape.
    """
    inputs = inputs.float().contiguous()
    # as the runtime computes: exact ties (the pyramid pooling's means of
    # two) round as its QuantizeLinear rounds them
    with runtime_arithmetic(deploy_model, runtime):
        sim = deploy_model.eval()(inputs)
    run = load_runtime(runtime, onnx_path, **runtime_options)
    out = torch.from_numpy(np.asarray(run(inputs.numpy())))
    if out.shape != sim.shape:
        raise ValueError(f'{onnx_path} outputs {tuple(out.shape)}, the '
                         f'simulation {tuple(sim.shape)}')
    size = inputs.shape[-2:]
    same = seg_labels(sim, size, align_corners) == seg_labels(
        out, size, align_corners)
    return SegmentationParity(
        runtime, len(inputs), sqnr_db(sim.numpy(), out.numpy()),
        float(same.float().mean()),
        runs_int8_kernels(runtime, **runtime_options)
        and int8_pairs_saturate())


@DEPLOY_HEADS.register_module(name='segmentation')
class SegmentationDeployHead(BaseDeployHead):
    """Segmentors (the ``segmentation`` task): logits SQNR and the label
    maps both give (:func:`check_segmentation_parity`)."""

    def check_parity(self, qmodel, deploy_model, onnx_path, inputs,
                     data_samples, runtime, **options):
        architecture = getattr(qmodel, 'architecture', qmodel)
        if not hasattr(architecture, 'decode_head'):
            raise ValueError(
                f'{type(architecture).__name__}: the segmentation deploy '
                'head needs a segmentor with a decode_head')
        return check_segmentation_parity(
            deploy_model, onnx_path, inputs, runtime,
            align_corners=bool(getattr(architecture, 'align_corners',
                                       False)),
            **options)
