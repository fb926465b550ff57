"""mmseg's modules registered once; small digit-like segmentation batches."""
import pytest
import torch


@pytest.fixture(scope='session', autouse=True)
def mmseg_modules():
    from mmseg.utils import register_all_modules
    register_all_modules(init_default_scope=False)


def seg_batch(size: int = 32, num: int = 2, seed: int = 0) -> dict:
    """``num`` grey ``size x size`` images (0..255) with two bright bars
    each, and ``SegDataSample``s labelling the bars 1 and 2 (background 0),
    as mmseg's data loaders give them."""
    from mmengine.structures import PixelData
    from mmseg.structures import SegDataSample
    gen = torch.Generator().manual_seed(seed)
    inputs, samples = [], []
    for _ in range(num):
        img = torch.rand(3, size, size, generator=gen) * 40
        label = torch.zeros(1, size, size, dtype=torch.long)
        y, x = (int(v) for v in torch.randint(2, size // 2, (2, ),
                                              generator=gen))
        label[:, y:y + size // 3, x:x + 3] = 1
        label[:, size - y - 4:size - y, 4:size - 4] = 2
        img[:, label[0] > 0] += 200
        sample = SegDataSample(metainfo=dict(
            img_shape=(size, size), ori_shape=(size, size),
            pad_shape=(size, size)))
        sample.gt_sem_seg = PixelData(data=label)
        inputs.append(img)
        samples.append(sample)
    return dict(inputs=inputs, data_samples=samples)
