"""Segmentation bad input: another codebase's data samples, a dataset
without masks."""
import os
import os.path as osp

import pytest
import torch

from mmrazor_quant.datasets import DigitCanvasSegDataset
from mmrazor_quant.registry import MODELS
from .toy_segmentors import quant_cfg, segformer_cfg

SMALL = dict(num_train=3, num_val=2, canvas_size=32, grid=2,
             digits_per_image=(1, 2), scale_range=(12, 16))


@pytest.mark.parametrize('mode', ['loss', 'predict'])
def test_detection_samples_name_the_sample_type(mode):
    from mmdet.structures import DetDataSample
    model = MODELS.build(quant_cfg(segformer_cfg(), 'openvino', 32))
    samples = [DetDataSample(metainfo=dict(img_shape=(32, 32)))] * 2
    with pytest.raises(TypeError,
                       match=r'data_samples\[0\] is a DetDataSample'):
        model(torch.rand(2, 3, 32, 32), samples, mode=mode)


def test_samples_without_gt_sem_seg_name_the_key():
    from mmseg.structures import SegDataSample
    model = MODELS.build(quant_cfg(segformer_cfg(), 'openvino', 32))
    samples = [SegDataSample(metainfo=dict(img_shape=(32, 32)))] * 2
    with pytest.raises(ValueError, match=r'data_samples\[0\] has no '
                       r'gt_sem_seg'):
        model(torch.rand(2, 3, 32, 32), samples, mode='loss')


def test_dataset_without_masks_is_an_error(tmp_path):
    root = str(tmp_path / 'seg')
    DigitCanvasSegDataset(data_root=root, split='val', canvas=SMALL,
                          pipeline=[])
    for name in os.listdir(osp.join(root, 'masks', 'val')):
        os.remove(osp.join(root, 'masks', 'val', name))
    with pytest.raises(ValueError, match=r"2 of 2 images have no mask "
                       r"\(data_prefix.seg_map_path='.*masks/val/'"):
        DigitCanvasSegDataset(data_root=root, split='val', canvas=SMALL,
                              pipeline=[])


def test_unknown_split_names_the_argument(tmp_path):
    with pytest.raises(ValueError, match="split must be 'train' or 'val'"):
        DigitCanvasSegDataset(data_root=str(tmp_path), split='test')


def test_tta_wrapper_names_tta_model():
    """The configs' ``tta_model`` (mmseg's SegTTAModel) merges flipped and
    rescaled runs in Python: refused before any tracing, naming the key."""
    cfg = quant_cfg(segformer_cfg(), 'openvino', 32)
    cfg['architecture'] = dict(type='mmseg.SegTTAModel',
                               module=cfg['architecture'])
    with pytest.raises(ValueError, match=r"SegTTAModel.*`tta_model`"):
        MODELS.build(cfg)
