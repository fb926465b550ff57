"""The keypoint digits: keypoint definitions on hand-drawn digits, the COCO
files, mmpose's dataset over them and mmpose's evaluators with the set's
sigmas."""
import json
import os.path as osp

import numpy as np
import pytest
from mmengine.registry import DefaultScope

from mmrazor_quant.datasets import PoseDigitsDataset
from mmrazor_quant.datasets.pose_digits import (
    DIGIT_KEYPOINT_SIGMAS,
    DIGIT_KEYPOINTS,
    digit_box,
    digit_keypoints,
)


def test_keypoints_of_a_hand_drawn_digit():
    # A '7': a bar on row 2 (cols 3..8, col 8 faint) and a stroke down
    # col 7 (rows 3..9), value 200, plus one faint pixel (100) at (10, 1).
    digit = np.zeros((12, 12), np.uint8)
    digit[2, 3:8] = 200
    digit[2, 8] = 100
    digit[3:10, 7] = 200
    digit[10, 1] = 100
    points = digit_keypoints(digit)
    assert DIGIT_KEYPOINTS == ('top', 'bottom', 'left', 'right', 'center')
    # top: row 2; ink of rows 2..3 at cols 3..7 and 7 -> mean x 5.5
    np.testing.assert_allclose(points[0], [(3 + 4 + 5 + 6 + 7 + 7) / 6, 2])
    # bottom: row 9; ink of rows 8..9 is col 7
    np.testing.assert_allclose(points[1], [7, 9])
    # left: col 3 (the faint pixels are no ink); ink of cols 3..4: row 2
    np.testing.assert_allclose(points[2], [3, 2])
    # right: col 7; ink of cols 6..7: rows 2, 2, 3..9 -> mean row
    np.testing.assert_allclose(points[3], [7, (2 + 2 + sum(range(3, 10))) /
                                           9])
    # center: value-weighted centroid of the ink (all 200 here)
    rows, cols = np.nonzero(digit >= 128)
    np.testing.assert_allclose(points[4], [cols.mean(), rows.mean()],
                               rtol=1e-6)
    # the box covers every pixel > 32, faint ones too
    assert digit_box(digit) == [1.0, 2.0, 8.0, 9.0]


def test_keypoints_follow_a_shift():
    digit = np.zeros((20, 20), np.uint8)
    digit[4:9, 5] = 255
    digit[8, 5:10] = 180
    shifted = np.roll(digit, (3, 2), axis=(0, 1))
    np.testing.assert_allclose(digit_keypoints(shifted),
                               digit_keypoints(digit) + [2, 3], rtol=1e-6)


def test_empty_digit_is_an_error():
    with pytest.raises(ValueError, match='no ink'):
        digit_keypoints(np.full((8, 8), 100, np.uint8))


def test_coco_files_and_dataset(digits_root):
    with open(osp.join(digits_root, 'annotations', 'val.json')) as f:
        coco = json.load(f)
    assert len(coco['images']) == len(coco['annotations']) == 16
    assert coco['categories'][0]['keypoints'] == list(DIGIT_KEYPOINTS)
    ann = coco['annotations'][0]
    points = np.reshape(ann['keypoints'], (5, 3))
    x, y, w, h = ann['bbox']
    assert (points[:, 2] == 2).all()
    assert (points[:, 0] >= x).all() and (points[:, 0] < x + w).all()
    assert (points[:, 1] >= y).all() and (points[:, 1] < y + h).all()
    with DefaultScope.overwrite_default_scope('mmpose'):
        dataset = PoseDigitsDataset(data_root=digits_root, split='train')
    assert len(dataset) == 16
    assert dataset.metainfo['num_keypoints'] == 5
    np.testing.assert_allclose(dataset.metainfo['sigmas'],
                               DIGIT_KEYPOINT_SIGMAS)
    # left and right swap under a flip; top, bottom and center stay
    assert dataset.metainfo['flip_indices'] == [0, 1, 3, 2, 4]


def test_unknown_split_is_an_error(digits_root):
    with pytest.raises(ValueError, match="split must be 'train' or 'val'"):
        PoseDigitsDataset(data_root=digits_root, split='test')


def _metric_results(dataset, offset):
    """Data samples as mmpose's evaluators receive them, each prediction
    the ground truth moved by ``offset`` pixels."""
    samples = []
    for i in range(len(dataset)):
        info = dataset.get_data_info(i)
        gt = info['keypoints']
        samples.append(dict(
            id=info['id'], img_id=info['img_id'], category_id=1,
            ori_shape=(28, 28), raw_ann_info=info['raw_ann_info'],
            gt_instances=dict(bboxes=info['bbox'],
                              bbox_scores=info['bbox_score'],
                              keypoints=gt,
                              keypoints_visible=info['keypoints_visible']),
            pred_instances=dict(keypoints=gt + offset,
                                keypoint_scores=np.ones(gt.shape[:2]),
                                bboxes=info['bbox'],
                                bbox_scores=info['bbox_score'])))
    return samples


@pytest.mark.parametrize('offset,ap', [(0.0, 1.0), (6.0, 0.0)])
def test_coco_keypoint_ap_with_the_digit_sigmas(digits_root, offset, ap):
    from mmpose.evaluation import CocoMetric, PCKAccuracy
    with DefaultScope.overwrite_default_scope('mmpose'):
        dataset = PoseDigitsDataset(data_root=digits_root, split='val',
                                    test_mode=True)
    samples = _metric_results(dataset, offset)
    coco = CocoMetric(ann_file=osp.join(digits_root, 'annotations',
                                        'val.json'))
    coco.dataset_meta = dataset.metainfo
    coco.process([], samples)
    metrics = coco.evaluate(len(samples))
    assert metrics['coco/AP'] == pytest.approx(ap, abs=1e-6)
    pck = PCKAccuracy(thr=0.1)
    pck.dataset_meta = dataset.metainfo
    pck.process([], samples)
    assert pck.evaluate(len(samples))['PCK'] == (1.0 if offset == 0 else 0.)


def test_an_interrupted_write_leaves_no_folder(tmp_path):
    from mmrazor_quant.datasets.atomic_folder import atomic_folder
    root = tmp_path / 'digits'
    with pytest.raises(RuntimeError, match='stop'):
        with atomic_folder(str(root), '.digits_') as tmp:
            (tmp_path / 'x').write_text('')
            open(osp.join(tmp, 'half.json'), 'w').close()
            raise RuntimeError('stop')
    assert sorted(p.name for p in tmp_path.iterdir()) == ['x']
    with atomic_folder(str(root), '.digits_') as tmp:
        open(osp.join(tmp, 'whole.json'), 'w').close()
    assert sorted(p.name for p in root.iterdir()) == ['whole.json']


def test_dataset_meta_loads_with_weights_only(tmp_path):
    # A checkpoint's meta holds the dataset's parsed metainfo (numpy
    # arrays); an empty array pickles a call of `bytes`, which
    # torch.load(weights_only=True) refuses.
    import torch
    from mmpose.datasets.datasets.utils import parse_pose_metainfo

    from mmrazor_quant.utils import register_checkpoint_safe_globals
    meta = parse_pose_metainfo(PoseDigitsDataset.METAINFO)
    assert meta['num_skeleton_links'] == 4
    path = str(tmp_path / 'meta.pth')
    torch.save(dict(meta=dict(dataset_meta=meta)), path)
    register_checkpoint_safe_globals()
    loaded = torch.load(path, weights_only=True)
    np.testing.assert_allclose(loaded['meta']['dataset_meta']['sigmas'],
                               DIGIT_KEYPOINT_SIGMAS)
