"""The adapter of mmpose top-down pose estimators."""
from typing import ContextManager, List, Optional, Sequence, Tuple

import torch
from torch import nn

from mmrazor_quant.registry import CODEBASES
from .base import BaseCodebase
from .mmpose_rewrites import mmpose_rewrites

__all__ = ['MMPoseCodebase']


@CODEBASES.register_module()
class MMPoseCodebase(BaseCodebase):
    """mmpose top-down estimators (``TopdownPoseEstimator``: RTMPose,
    SimpleBaseline, LiteHRNet, ...).

    Modes: ``tensor`` returns the head's raw outputs, the graph that is
    exported: SimCC vectors ``(pred_x (N, K, W*r), pred_y (N, K, H*r))`` or
    heatmaps ``(N, K, h, w)``; decoding to keypoints stays outside it, as in
    mmdeploy. ``predict`` returns ``PoseDataSample``s with
    ``pred_instances.keypoints`` in image coordinates, ``loss`` a dict of
    losses. mmpose's ``forward`` has no default for ``data_samples``: the
    tracer passes None in every mode. The graphs hold the backbone, neck
    and head ``forward``; the heads' targets, losses, flip-test
    combination (the configs' ``test_cfg.flip_test=True``) and decoding
    run outside them (:func:`mmpose_rewrites`). The input size is the
    test pipeline's ``TopdownAffine`` ``input_size``, else the head's codec
    (an RTMPose SimCC head is built for one input size).
    """
    packages = ('mmpose', )
    task = 'pose'
    skipped_methods = (
        'mmpose.models.heads.base_head.BaseHead.decode',
        'mmpose.models.losses.classification_loss.KLDiscretLoss.forward',
        'mmpose.models.losses.heatmap_loss.KeypointMSELoss.forward',
    )
    # mmpose's ResNet blocks; CSPNeXt's (from mmdet) stage layers.
    block_types = ('BasicBlock', 'Bottleneck', 'CSPLayer')

    def tracer_rewrites(self) -> ContextManager[None]:
        """Swap mmpose's sample-looping methods for traceable ones."""
        return mmpose_rewrites()

    def pipeline_hw(self, pipeline: Sequence[dict]
                    ) -> Optional[Tuple[Tuple[int, int], str]]:
        """The ``(w, h)`` ``input_size`` of the last ``TopdownAffine`` as
        ``(H, W)``; else the generic transforms (:class:`BaseCodebase`)."""
        for transform in reversed(list(pipeline)):
            kind = str(transform.get('type', '')).split('.')[-1]
            if kind == 'TopdownAffine' and 'input_size' in transform:
                w, h = transform['input_size']
                return (int(h), int(w)), "the test pipeline's TopdownAffine"
        return super().pipeline_hw(pipeline)

    def model_hw(self, model: nn.Module
                 ) -> Optional[Tuple[Tuple[int, int], str]]:
        """The ``(w, h)`` ``input_size`` of the head's codec as ``(H, W)``."""
        decoder = getattr(getattr(model, 'head', None), 'decoder', None)
        size = getattr(decoder, 'input_size', None)
        if size is None:
            return super().model_hw(model)
        w, h = size
        return (int(h), int(w)), "the head's codec input_size"

    def gt_keypoints(self, data_samples: Sequence) -> Optional[torch.Tensor]:
        """``gt_instances.keypoints`` of each sample, ``(N, K, 2)`` in image
        coordinates (the first instance of each); None without samples.

        Raises:
            TypeError: If a sample is not a ``PoseDataSample``.
            KeyError: If a sample has no ``gt_instances.keypoints``.
        """
        if not data_samples:
            return None
        from mmpose.structures import PoseDataSample
        points = []
        for i, sample in enumerate(data_samples):
            if not isinstance(sample, PoseDataSample):
                raise TypeError(
                    f'{self.name}: data_samples[{i}] is a '
                    f'{type(sample).__name__}; mmpose models take '
                    'PoseDataSample')
            gt = sample.get('gt_instances')
            if gt is None or 'keypoints' not in gt:
                raise KeyError(
                    f'{self.name}: data_samples[{i}] has no '
                    '`gt_instances.keypoints`; a keypoint dataset must '
                    'annotate keypoints')
            points.append(torch.as_tensor(gt.keypoints[:1]).float())
        return torch.cat(points)

    def dataset_metainfo(self, cfg) -> dict:
        """``flip_indices`` of the config's test dataset (its class's
        ``METAINFO``, or the ``metainfo`` the config gives), which flip
        test reads from the data samples; empty without a dataset."""
        dataset = (cfg.get('test_dataloader') or {}).get('dataset') or {}
        if not dataset.get('type'):
            return {}
        from mmpose.datasets.datasets.utils import parse_pose_metainfo
        from mmpose.registry import DATASETS
        meta = dataset.get('metainfo')
        if meta is None:
            cls = DATASETS.get(dataset['type'])
            meta = getattr(cls, 'METAINFO', None)
        if not meta:
            return {}
        return dict(flip_indices=parse_pose_metainfo(dict(meta))[
            'flip_indices'])

    def dummy_data_samples(self, inputs: torch.Tensor,
                           tensor_outputs) -> List:
        """``PoseDataSample``s with one instance each: ``K`` keypoints
        spread over the input, encoded into the targets of the head's kind
        by mmpose's own codec (SimCC labels for a pair of outputs, MSRA
        heatmaps for ``(N, K, h, w)``, regression labels for ``(N, K,
        2)``); ``K`` and the label sizes are read off ``tensor_outputs``.
        The metainfo is the test pipeline's for an input that needed no
        affine transform (``input_center``, ``input_scale``), with
        identity ``flip_indices`` (see :meth:`dataset_metainfo`)."""
        from mmpose.codecs import MSRAHeatmap, RegressionLabel, SimCCLabel
        h, w = inputs.shape[-2:]
        if isinstance(tensor_outputs, (tuple, list)):
            pred_x = tensor_outputs[0]
            codec = SimCCLabel(input_size=(w, h), sigma=2.0,
                               simcc_split_ratio=pred_x.shape[-1] / w)
        elif isinstance(tensor_outputs, torch.Tensor) and \
                tensor_outputs.dim() == 4:
            pred_x = tensor_outputs
            codec = MSRAHeatmap(input_size=(w, h), heatmap_size=tuple(
                tensor_outputs.shape[:1:-1]), sigma=2.0)
        elif isinstance(tensor_outputs, torch.Tensor) and \
                tensor_outputs.dim() == 3:
            pred_x = tensor_outputs
            codec = RegressionLabel(input_size=(w, h))
        else:
            raise TypeError(
                f'{self.name}: tensor outputs of type '
                f'{type(tensor_outputs).__name__} are neither SimCC vectors '
                '(a pair) nor heatmaps (N, K, h, w)')
        return [
            _encoded_sample(codec, _spread_keypoints(i, pred_x.shape[1], w,
                                                     h), (w, h))
            for i in range(len(inputs))
        ]


def _spread_keypoints(index: int, num_keypoints: int, w: int,
                      h: int) -> torch.Tensor:
    """``(1, K, 2)`` keypoints inside a ``w x h`` input, different per
    ``index``."""
    k = torch.arange(num_keypoints, dtype=torch.float32)
    x = (k + 1) / (num_keypoints + 1) * w
    y = ((k + index) % num_keypoints + 1) / (num_keypoints + 1) * h
    return torch.stack([x, y], -1)[None]


def _encoded_sample(codec, keypoints: torch.Tensor, input_size: tuple):
    """One ``PoseDataSample`` packed as ``PackPoseInputs`` packs the
    codec's targets."""
    import numpy as np
    from mmengine.structures import InstanceData, PixelData
    from mmpose.structures import PoseDataSample
    visible = np.ones(keypoints.shape[:2], np.float32)
    encoded = codec.encode(keypoints.numpy(), visible)
    w, h = input_size
    num_keypoints = keypoints.shape[1]
    sample = PoseDataSample(metainfo=dict(
        input_size=input_size, input_center=np.array([w / 2, h / 2]),
        input_scale=np.array([w, h], dtype=np.float32),
        flip_indices=list(range(num_keypoints))))
    # the whole input is the person's box, as a top-down pipeline gives it
    sample.gt_instances = InstanceData(
        keypoints=keypoints.numpy(), keypoints_visible=visible,
        bboxes=np.array([[0, 0, w, h]], np.float32),
        bbox_scores=np.ones(1, np.float32))
    labels = InstanceData()
    for key, value in encoded.items():
        if key == 'heatmaps':
            sample.gt_fields = PixelData(heatmaps=torch.from_numpy(value))
        else:
            labels.set_field(torch.from_numpy(np.asarray(value)), key)
    sample.gt_instance_labels = labels
    return sample
