"""Traceable stand-ins for the parts of mmpose's estimators that read data
samples.

The graph of every mode is the estimator's backbone, neck and head
``forward``: what gets quantized. Everything the head does with data
samples stays outside it, as mmdeploy keeps it outside the exported
model: in ``loss`` the targets stacked from the samples, the loss modules
and the training accuracy (:func:`pose_losses`); in ``predict`` the
flip-test combination (``test_cfg.flip_test=True``: the graph runs the
backbone and head on the input and on the mirrored input, and mmpose's
own head code flips back and averages the two with the dataset's
``flip_indices``), the decoding and the predictions written into the
samples (:func:`pose_predictions`). Both are recorded by ``torch.fx.wrap``
as single ``call_function`` nodes that run mmpose's own ``head.loss`` and
``head.predict`` with the head's ``forward`` handing back the graph's
outputs, so every head kind (heatmaps, SimCC, regression) works alike.
The estimator's ``forward`` gets a default for ``data_samples`` (None),
so that the tensor graph (and the exported deploy model) runs as
``gm(inputs)``.

LiteHRNet's ``CrossResolutionWeighting`` pools its branches to the size
of the smallest, read from the graph; its trace reads that size as
integers (:func:`cross_resolution_pooled`), so the export holds constant
pools.
"""
from types import SimpleNamespace
from typing import Any, ContextManager, List, Optional, Tuple

import torch
import torch.fx
import torch.nn.functional as F

from .base import static_shape
from .swapped_methods import swapped_methods

__all__ = ['mmpose_rewrites']


def pose_losses(head: Any, outputs: Any, batch_data_samples: List[Any],
                train_cfg: dict) -> dict:
    """mmpose's ``head.loss`` on the head outputs that the graph computed:
    the targets stacked from the data samples, the loss modules and the
    training accuracy run outside the graph, as mmpose writes them for
    every head kind (``forward`` hands back the graph's outputs)."""
    head.forward = _identity  # the instance's, over the class's forward
    try:
        return head.loss(outputs, batch_data_samples, train_cfg=train_cfg)
    finally:
        del head.forward


def pose_predictions(head: Any, outputs: Any, flip_test: bool,
                     batch_data_samples: Optional[List[Any]],
                     test_cfg: dict) -> List[Any]:
    """The rest of ``TopdownPoseEstimator.predict`` after the head's
    ``forward``: mmpose's own ``head.predict`` (flip-test combination and
    decoding) and ``add_pred_to_datasample``, run on the head outputs that
    the graph computed (with ``flip_test``, a batch twice as long: the
    outputs of the inputs, then of their mirror images).

    The head's ``predict`` reads its features only through
    ``self.forward``; here ``forward`` hands back the graph's outputs, so
    every head kind (heatmaps, SimCC, regression) combines and decodes as
    mmpose does, outside the graph.

    Raises:
        ValueError: Without data samples (the predictions are written into
            them, and flip test reads their ``flip_indices``).
    """
    from mmpose.models.pose_estimators import TopdownPoseEstimator
    if not batch_data_samples:
        raise ValueError(
            "predict mode needs PoseDataSample's with the pipeline's "
            'metainfo (input_center, input_scale, input_size'
            + (', and flip_indices for model.test_cfg.flip_test=True'
               if flip_test else '') + ')')
    feats = [_half(outputs, 0), _half(outputs, 1)] if flip_test else outputs
    head.forward = _identity  # the instance's, over the class's forward
    try:
        preds = head.predict(feats, batch_data_samples, test_cfg=test_cfg)
    finally:
        del head.forward
    instances, fields = preds if isinstance(preds, tuple) else (preds, None)
    return TopdownPoseEstimator.add_pred_to_datasample(
        SimpleNamespace(test_cfg=test_cfg), instances, fields,
        batch_data_samples)


def _half(outputs: Any, index: int) -> Any:
    """The first (0) or second (1) half of the batch of every output."""
    if isinstance(outputs, torch.Tensor):
        return outputs.chunk(2)[index]
    return type(outputs)(_half(o, index) for o in outputs)


def _identity(x: Any) -> Any:
    return x


def cross_resolution_pooled(branches: List[torch.Tensor]) -> List:
    """LiteHRNet's ``CrossResolutionWeighting`` pooling: every branch but
    the last average-pooled to the last one's size, that size read as
    integers (the input size is fixed), so the export holds constant
    pools instead of an adaptive pool to a size computed in the graph,
    which ONNX cannot export."""
    from .mmseg_rewrites import adaptive_avg_pool_by_bins
    size = tuple(int(v) for v in branches[-1].shape[-2:])
    return [adaptive_avg_pool_by_bins(s, size) for s in branches[:-1]] + [
        branches[-1]]


# Record calls of these as graph nodes instead of tracing into them.
for _name in ('pose_losses', 'pose_predictions'):
    torch.fx.wrap(_name)


def _estimator_loss(self, inputs, data_samples):
    outputs = self.head(self.extract_feat(inputs))
    return pose_losses(self.head, outputs, data_samples,
                       dict(self.train_cfg or {}))


def _estimator_predict(self, inputs, data_samples):
    # The head's forward is the graph; with flip test it runs once on the
    # inputs and their mirror images stacked into one batch (so both pass
    # the same fake quants, those the tensor mode calibrates), and the
    # halves are combined and decoded outside it.
    flip_test = self.test_cfg.get('flip_test', False)
    if flip_test:
        inputs = with_mirror_images(inputs)
    outputs = self.head(self.extract_feat(inputs))
    return pose_predictions(self.head, outputs, flip_test, data_samples,
                            dict(self.test_cfg))


def with_mirror_images(inputs: torch.Tensor) -> torch.Tensor:
    """``torch.cat([inputs, inputs.flip(-1)])`` written with indexing and
    reshapes only, which the quantizers treat as moving values: the
    batch stays on the grid of the input's fake quant, the one the tensor
    mode calibrates (a concat would get a fake quant of its own that no
    calibration sees). The width is read from the trace's example input
    without a node in the graph (a second reader of the input would make
    the fake quant's place shift off it): the graph is built for the
    traced input size, as every shape in it is."""
    width = static_shape(inputs)[-1]
    columns = torch.arange(width)
    columns = torch.stack([columns, columns.flip(0)])  # (2, W)
    rows = torch.arange(2)[:, None]  # (2, 1)
    pair = inputs.unsqueeze(0).expand(2, -1, -1, -1, -1)  # (2, N, C, H, W)
    # advanced indices apart: their broadcast (2, W) comes first
    picked = pair[rows, :, :, :, columns]  # (2, W, N, C, H)
    return picked.permute(0, 2, 3, 4, 1).flatten(0, 1)


def _cross_resolution_forward(self, x):
    out = self.conv2(self.conv1(torch.cat(cross_resolution_pooled(x),
                                          dim=1)))
    return [
        s * F.interpolate(a, size=s.size()[-2:], mode='nearest')
        for s, a in zip(x, torch.split(out, self.channels, dim=1))
    ]


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
        from mmpose.models.backbones.litehrnet import CrossResolutionWeighting
        from mmpose.models.pose_estimators import TopdownPoseEstimator
        from mmpose.models.pose_estimators.base import BasePoseEstimator
    except ImportError:  # no mmpose: nothing to rewrite
        return []
    _ORIGINAL_FORWARD.setdefault(BasePoseEstimator,
                                 BasePoseEstimator.__dict__['forward'])
    return [(BasePoseEstimator, 'forward', _estimator_forward),
            (TopdownPoseEstimator, 'loss', _estimator_loss),
            (TopdownPoseEstimator, 'predict', _estimator_predict),
            (CrossResolutionWeighting, 'forward', _cross_resolution_forward)]


def mmpose_rewrites() -> ContextManager[None]:
    """Swap mmpose's sample-looping methods for traceable ones meanwhile."""
    return swapped_methods(_rewrites())
