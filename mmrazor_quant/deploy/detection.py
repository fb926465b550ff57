"""The detection deploy head: parity of an exported detector's tensor
outputs (backbone, neck, head; post-processing stays outside, as in
mmdeploy) with the simulation."""
from dataclasses import dataclass
from typing import List

import torch
from torch import Tensor, nn

from mmrazor_quant.registry import DEPLOY_HEADS
from mmrazor_quant.utils.sqnr import sqnr_db
from .deploy_heads import BaseDeployHead
from .runtime_arithmetic import runtime_arithmetic
from .runtimes import load_runtime

__all__ = [
    'DetectionParity', 'check_detection_parity', 'is_detector',
    'DetectionDeployHead'
]


@dataclass
class DetectionParity:
    """Agreement of a runtime's head outputs and decoded boxes.

    Attributes:
        runtime (str): A registered runtime (see :mod:`.runtimes`).
        num_images (int): Images compared.
        min_sqnr_db (float): Lowest SQNR over the head outputs (dB).
        box_agreement (float): Fraction of the simulation's boxes that the
            runtime's decoded outputs reproduce (same label, and IoU >= 0.9
            or every corner within :data:`BOX_CORNER_TOL` pixels).
    """
    runtime: str
    num_images: int
    min_sqnr_db: float
    box_agreement: float

    def format(self) -> str:
        """One line for a log."""
        return (f'{self.runtime} vs simulation on {self.num_images} images: '
                f'lowest head-output SQNR {self.min_sqnr_db:.1f} dB, '
                f'{100 * self.box_agreement:.1f}% of the decoded boxes '
                'reproduced')


def is_detector(qmodel: nn.Module) -> bool:
    """Whether ``qmodel`` wraps a dense-head detector (its export ends at
    the head's per-level outputs; parity is checked on them and on the
    decoded boxes)."""
    architecture = getattr(qmodel, 'architecture', None)
    head = getattr(architecture, 'bbox_head', None)
    return head is not None and hasattr(head, 'prior_generator')


def _flat(outputs) -> List[Tensor]:
    """The head's nested ``(cls_scores, bbox_preds, ...)`` per-level lists,
    flattened in the order ONNX export writes them."""
    if isinstance(outputs, Tensor):
        return [outputs]
    return [t for item in outputs for t in _flat(item)]


def _decode(head: nn.Module, flat: List[Tensor], num_levels: int,
            metas: List[dict]):
    groups = [flat[i:i + num_levels] for i in range(0, len(flat),
                                                      num_levels)]
    return head.predict_by_feat(*groups, batch_img_metas=metas,
                                rescale=False)


#: Corners this close (pixels) make a box reproduced even where its IoU
#: is undefined: a low-score box of an unused level can have zero area.
BOX_CORNER_TOL = 0.5


def _box_agreement(sim, rt) -> float:
    from mmdet.structures.bbox import bbox_overlaps
    matched = total = 0
    for s, r in zip(sim, rt):
        total += len(s.bboxes)
        if len(s.bboxes) == 0 or len(r.bboxes) == 0:
            continue
        iou = bbox_overlaps(s.bboxes, r.bboxes)
        corners = (s.bboxes[:, None] - r.bboxes[None]).abs().amax(-1)
        close = (iou >= 0.9) | (corners <= BOX_CORNER_TOL)
        same = s.labels[:, None] == r.labels[None, :]
        matched += int((close & same).any(1).sum())
    return matched / total if total else 1.0


def check_detection_parity(qmodel: nn.Module, onnx_path: str,
                           inputs: Tensor, runtime: str = 'onnxruntime',
                           **runtime_options) -> DetectionParity:
    """Run ``onnx_path`` in ``runtime`` and the deploy model on ``inputs``.

    Args:
        qmodel (MMArchitectureQuant): The calibrated detector.
        onnx_path (str): Its export (tensor outputs).
        inputs (Tensor): A preprocessed batch ``(N, 3, H, W)``.
        runtime (str): A registered runtime (see :mod:`.runtimes`).
        **runtime_options: Passed to the runtime loader.

    Returns:
        DetectionParity: Head-output SQNR and decoded-box agreement.
    """
    deploy = qmodel.get_deploy_model().eval()
    with torch.no_grad(), runtime_arithmetic(deploy, runtime):
        sim = _flat(deploy(inputs.float()))
    run = load_runtime(runtime, onnx_path, all_outputs=True,
                       **runtime_options)
    outs = run(inputs.float().numpy())
    if len(outs) != len(sim):
        raise ValueError(f'{onnx_path} has {len(outs)} outputs, the '
                         f'simulation {len(sim)}')
    sqnr = min(sqnr_db(s.numpy(), o) for s, o in zip(sim, outs))
    head = qmodel.architecture.bbox_head
    num_levels = len(head.prior_generator.strides)
    h, w = inputs.shape[-2:]
    # mmyolo's heads also read ori_shape (they decode without rescaling)
    metas = [dict(img_shape=(h, w), ori_shape=(h, w),
                  scale_factor=(1., 1.))] * len(inputs)
    with torch.no_grad():
        boxes_sim = _decode(head, sim, num_levels, metas)
        boxes_rt = _decode(head, [torch.from_numpy(o) for o in outs],
                           num_levels, metas)
    return DetectionParity(runtime, len(inputs), sqnr,
                           _box_agreement(boxes_sim, boxes_rt))


@DEPLOY_HEADS.register_module(name='detection')
class DetectionDeployHead(BaseDeployHead):
    """Dense-head detectors (the ``detection`` task): head-output SQNR and
    the boxes both decode to (:func:`check_detection_parity`)."""

    def check_parity(self, qmodel, deploy_model, onnx_path, inputs,
                     data_samples, runtime, **options):
        if not is_detector(qmodel):
            raise ValueError(
                f'{type(qmodel.architecture).__name__}: the detection '
                'deploy head needs a dense head (bbox_head with a '
                'prior_generator)')
        return check_detection_parity(qmodel, onnx_path, inputs, runtime,
                                      **options)
