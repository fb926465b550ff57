"""mmdet's modules registered once; a small batch of digit-like boxes."""
import pytest
import torch


@pytest.fixture(scope='session', autouse=True)
def mmdet_modules():
    from mmdet.utils import register_all_modules
    register_all_modules(init_default_scope=False)
    from .toy_detectors import register_toy_backbone
    register_toy_backbone()


@pytest.fixture
def det_batch():
    """Two 64x64 images with a bright square per box, as mmdet batches;
    box sizes match the tiny RetinaNet's anchors on both levels (8, 16)."""
    from mmdet.structures import DetDataSample
    from mmengine.structures import InstanceData
    gen = torch.Generator().manual_seed(0)
    boxes = [torch.tensor([[4., 6., 30., 28.], [40., 40., 49., 49.]]),
             torch.tensor([[10., 12., 40., 44.], [36., 2., 60., 20.]])]
    inputs, samples = [], []
    for i, bb in enumerate(boxes):
        img = torch.rand(3, 64, 64, generator=gen) * 40
        for x1, y1, x2, y2 in bb.long().tolist():
            img[:, y1:y2, x1:x2] += 200
        meta = dict(img_shape=(64, 64), ori_shape=(64, 64),
                    scale_factor=(1., 1.))
        sample = DetDataSample(metainfo=meta)
        sample.gt_instances = InstanceData(
            bboxes=bb, labels=torch.arange(len(bb)) + i)
        inputs.append(img)
        samples.append(sample)
    return dict(inputs=inputs, data_samples=samples)
