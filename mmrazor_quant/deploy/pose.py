"""The pose deploy head: parity of an exported top-down pose estimator's
head outputs (SimCC vectors or heatmaps; decoding to keypoints stays outside
the graph, as in mmdeploy) with the simulation."""
from dataclasses import dataclass
from typing import List, Sequence, Union

import numpy as np
import torch
from torch import Tensor, nn

from mmrazor_quant.registry import DEPLOY_HEADS
from mmrazor_quant.utils.sqnr import sqnr_db
from .deploy_heads import BaseDeployHead
from .runtime_arithmetic import runtime_arithmetic
from .runtimes import load_runtime

__all__ = [
    'PoseParity', 'check_pose_parity', 'decode_keypoints', 'PoseDeployHead'
]


@dataclass
class PoseParity:
    """Agreement of a runtime's head outputs and decoded keypoints.

    Attributes:
        runtime (str): A registered runtime (see :mod:`.runtimes`).
        num_samples (int): Inputs compared.
        min_sqnr_db (float): Lowest SQNR over the head outputs (dB).
        max_keypoint_diff (float): Largest distance between a keypoint the
            simulation decodes and the runtime's, in input pixels.
        mean_keypoint_diff (float): The mean of those distances.
        keypoint_agreement (float): Fraction of the keypoints that the
            runtime's outputs decode to within half an input pixel of the
            simulation's (a flat heatmap or SimCC vector can put an arg-max
            tie elsewhere).
    """
    runtime: str
    num_samples: int
    min_sqnr_db: float
    max_keypoint_diff: float
    mean_keypoint_diff: float
    keypoint_agreement: float

    def format(self) -> str:
        """One line for a log."""
        return (f'{self.runtime} vs simulation on {self.num_samples} inputs: '
                f'lowest head-output SQNR {self.min_sqnr_db:.1f} dB, decoded '
                f'keypoints {self.mean_keypoint_diff:.3f} px apart on '
                f'average, {self.max_keypoint_diff:.3f} px at most, '
                f'{100 * self.keypoint_agreement:.1f}% within 0.5 px')


def _as_list(outputs: Union[Tensor, Sequence[Tensor]]) -> List[Tensor]:
    """A head's outputs (one heatmap tensor or the SimCC pair) as a list,
    in the order ONNX export writes them."""
    return [outputs] if isinstance(outputs, Tensor) else list(outputs)


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


def check_pose_parity(qmodel: nn.Module, onnx_path: str, inputs: Tensor,
                      runtime: str = 'onnxruntime',
                      **runtime_options) -> PoseParity:
    """Run ``onnx_path`` in ``runtime`` and the deploy model on ``inputs``.

    Args:
        qmodel (MMArchitectureQuant): The calibrated pose estimator.
        onnx_path (str): Its export (the head's raw outputs).
        inputs (Tensor): A preprocessed batch ``(N, 3, H, W)``.
        runtime (str): A registered runtime (see :mod:`.runtimes`).
        **runtime_options: Passed to the runtime loader.

    Returns:
        PoseParity: Head-output SQNR and decoded-keypoint distances.

    Raises:
        ValueError: If the file and the simulation have different numbers
            of outputs.
    """
    deploy = qmodel.get_deploy_model().eval()
    with torch.no_grad(), runtime_arithmetic(deploy, runtime):
        sim = _as_list(deploy(inputs.float()))
    run = load_runtime(runtime, onnx_path, all_outputs=True,
                       **runtime_options)
    outs = [torch.from_numpy(o) for o in run(inputs.float().numpy())]
    if len(outs) != len(sim):
        raise ValueError(f'{onnx_path} has {len(outs)} outputs, the '
                         f'simulation {len(sim)}')
    sqnr = min(sqnr_db(s.numpy(), o.numpy()) for s, o in zip(sim, outs))
    head = qmodel.architecture.head
    dist = np.linalg.norm(
        decode_keypoints(head, sim) - decode_keypoints(head, outs), axis=-1)
    return PoseParity(runtime, len(inputs), sqnr, float(dist.max()),
                      float(dist.mean()), float((dist <= 0.5).mean()))


@DEPLOY_HEADS.register_module(name='pose')
class PoseDeployHead(BaseDeployHead):
    """Top-down pose estimators (the ``pose`` task): head-output SQNR and
    the keypoints both decode to (:func:`check_pose_parity`)."""

    def check_parity(self, qmodel, deploy_model, onnx_path, inputs,
                     data_samples, runtime, **options):
        head = getattr(qmodel.architecture, 'head', None)
        if getattr(head, 'decoder', None) is None:
            raise ValueError(
                f'{type(qmodel.architecture).__name__}: the pose deploy head '
                'needs a head with a codec (`head.decoder`) to decode '
                'keypoints')
        return check_pose_parity(qmodel, onnx_path, inputs, runtime,
                                 **options)
