"""The digit segmentation set: masks from the canvases' boxes and ink, read
by mmseg's pipeline and scored by mmseg's IoUMetric."""
import json
import os.path as osp

import cv2
import numpy as np
import pytest

from mmrazor_quant.datasets import DigitCanvasSegDataset
from mmrazor_quant.datasets.seg_digits import STROKE_THRESHOLD, digit_mask

SMALL = dict(num_train=4, num_val=3, canvas_size=32, grid=2,
             digits_per_image=(2, 3), scale_range=(12, 16))


def test_digit_mask_labels_ink_inside_each_box():
    canvas = np.zeros((6, 8), np.uint8)
    canvas[1, 1:3] = [200, 100]   # digit 3: one stroke pixel, one faint
    canvas[4, 5] = 255            # digit 0
    canvas[4, 1] = 255            # ink outside every box stays background
    anns = [dict(bbox=[1, 0, 3, 3], category_id=3),
            dict(bbox=[5, 4, 2, 2], category_id=0)]
    mask = digit_mask(canvas, anns)
    want = np.zeros((6, 8), np.uint8)
    want[1, 1] = 4                # digit 3 -> class 4 (0 is background)
    want[4, 5] = 1                # digit 0 -> class 1
    assert STROKE_THRESHOLD == 128
    np.testing.assert_array_equal(mask, want)


@pytest.fixture(scope='module')
def dataset(tmp_path_factory):
    root = str(tmp_path_factory.mktemp('seg'))
    return DigitCanvasSegDataset(
        data_root=root, split='val', canvas=SMALL,
        pipeline=[dict(type='LoadImageFromFile'),
                  dict(type='mmseg.LoadAnnotations'),
                  dict(type='mmseg.PackSegInputs')])


def test_masks_follow_the_coco_boxes(dataset):
    root = dataset.data_root
    with open(osp.join(root, 'annotations', 'val.json')) as f:
        coco = json.load(f)
    assert len(dataset) == 3
    for img in coco['images']:
        canvas = cv2.imread(osp.join(root, 'val', img['file_name']), 0)
        mask = cv2.imread(osp.join(root, 'masks', 'val', img['file_name']),
                          cv2.IMREAD_UNCHANGED)
        anns = [a for a in coco['annotations'] if a['image_id'] == img['id']]
        assert set(np.unique(mask)) == {0} | {a['category_id'] + 1
                                            for a in anns}
        # every labelled pixel is ink, and all strong ink is labelled
        assert (canvas[mask > 0] >= STROKE_THRESHOLD).all()
        assert (mask[canvas >= STROKE_THRESHOLD] > 0).all()


def test_iou_metric_scores_the_labels_themselves_100(dataset):
    from mmseg.evaluation import IoUMetric
    metric = IoUMetric(iou_metrics=['mIoU'])
    metric.dataset_meta = dataset.metainfo
    for i in range(len(dataset)):
        sample = dataset[i]['data_samples']
        gt = sample.gt_sem_seg.data
        metric.process([], [dict(pred_sem_seg=dict(data=gt),
                                 gt_sem_seg=dict(data=gt))])
    result = metric.compute_metrics(metric.results)
    assert result['mIoU'] == 100.0
    assert dataset.metainfo['classes'][:2] == ('background', '0')
