"""A small semantic segmentation set: the digit canvases with a label per
pixel, as an mmseg dataset.

The canvases are those of :func:`make_digit_canvas_coco` (real MNIST5k
digits in distinct grid cells). Each digit's ink pixels, those at least half
as bright as full ink (grey value >= 128) inside the digit's box, get the
class ``digit + 1``; every other pixel is background, class 0. So there are
11 classes: ``background, 0, 1, ..., 9``. Boxes never overlap (one digit per
grid cell), so a pixel belongs to one digit at most. The masks are written
once next to the canvases, ``<root>/masks/{train,val}/*.png`` (one uint8
class index per pixel).
"""
import json
import os
import os.path as osp
import shutil
import tempfile
from typing import List, Optional

import cv2
import numpy as np
from mmseg.datasets import BaseSegDataset

from mmrazor_quant.registry import DATASETS
from .digit_canvas import DIGIT_CLASSES, SPLITS, make_digit_canvas_coco

__all__ = [
    'SEG_DIGIT_CLASSES', 'SEG_CANVAS', 'STROKE_THRESHOLD', 'digit_mask',
    'make_digit_seg_masks', 'DigitCanvasSegDataset'
]

SEG_DIGIT_CLASSES = ('background', ) + DIGIT_CLASSES
#: The canvases of :class:`DigitCanvasSegDataset` unless a config says.
SEG_CANVAS = dict(num_train=2000, num_val=400, canvas_size=64, grid=2,
                  digits_per_image=(2, 4), scale_range=(24, 32))
#: Grey value from which a canvas pixel counts as a stroke (half of 255).
STROKE_THRESHOLD = 128


def digit_mask(canvas: np.ndarray, annotations: List[dict]) -> np.ndarray:
    """The class map of one grey canvas: ``category_id + 1`` on the stroke
    pixels inside each COCO box, 0 elsewhere."""
    mask = np.zeros(canvas.shape[:2], np.uint8)
    for ann in annotations:
        x, y, w, h = (int(round(v)) for v in ann['bbox'])
        region = canvas[y:y + h, x:x + w] >= STROKE_THRESHOLD
        mask[y:y + h, x:x + w][region] = ann['category_id'] + 1
    return mask


def make_digit_seg_masks(root: str) -> str:
    """Write the masks of the canvas set in ``root`` unless they are there.

    Args:
        root (str): A folder written by :func:`make_digit_canvas_coco`.

    Returns:
        str: ``<root>/masks``.
    """
    out = osp.join(root, 'masks')
    if osp.isdir(out):
        return out
    tmp = tempfile.mkdtemp(prefix='.masks_', dir=root)
    try:
        for split in SPLITS:
            os.makedirs(osp.join(tmp, split))
            with open(osp.join(root, 'annotations', f'{split}.json')) as f:
                coco = json.load(f)
            per_image = {img['id']: [] for img in coco['images']}
            for ann in coco['annotations']:
                per_image[ann['image_id']].append(ann)
            for img in coco['images']:
                canvas = cv2.imread(
                    osp.join(root, split, img['file_name']),
                    cv2.IMREAD_GRAYSCALE)
                cv2.imwrite(osp.join(tmp, split, img['file_name']),
                            digit_mask(canvas, per_image[img['id']]))
        os.replace(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return out


@DATASETS.register_module()
class DigitCanvasSegDataset(BaseSegDataset):
    """:class:`mmseg.datasets.BaseSegDataset` over the digit canvases and
    their masks (:func:`make_digit_seg_masks`).

    Canvases and masks are written to ``data_root`` when it does not hold
    them yet (deterministic, a few seconds), so configs need no download
    step.

    Args:
        split (str): ``'train'`` or ``'val'``; sets the image and mask
            folders.
        canvas (dict): Arguments of :func:`make_digit_canvas_coco` (canvas
            size, counts, digit sizes). Defaults to 64 x 64 canvases with 2
            to 4 digits of 24 to 32 pixels in a 2 x 2 grid, 2,000 train and
            400 val canvases (:data:`SEG_CANVAS`); given keys replace
            those.
        **kwargs: :class:`BaseSegDataset`'s arguments (``data_root``
            required).

    Raises:
        ValueError: If ``split`` is unknown, or an image has no mask under
            ``data_prefix.seg_map_path``.
    """

    METAINFO = dict(
        classes=SEG_DIGIT_CLASSES,
        palette=[(0, 0, 0), (220, 20, 60), (119, 11, 32), (0, 0, 142),
                 (0, 0, 230), (106, 0, 228), (0, 60, 100), (0, 80, 100),
                 (0, 0, 70), (0, 0, 192), (250, 170, 30)])

    def __init__(self,
                 split: str = 'train',
                 canvas: Optional[dict] = None,
                 **kwargs) -> None:
        if split not in SPLITS:
            raise ValueError(
                f"{type(self).__name__}: split must be 'train' or 'val', "
                f'got {split!r}')
        self.split = split
        self.canvas = dict(SEG_CANVAS, **(canvas or {}))
        kwargs.setdefault(
            'data_prefix',
            dict(img_path=f'{split}/', seg_map_path=f'masks/{split}/'))
        kwargs.setdefault('img_suffix', '.png')
        kwargs.setdefault('seg_map_suffix', '.png')
        super().__init__(**kwargs)

    def load_data_list(self) -> List[dict]:
        make_digit_canvas_coco(self.data_root, **_tuples(self.canvas))
        make_digit_seg_masks(self.data_root)
        data_list = super().load_data_list()
        missing = [d['seg_map_path'] for d in data_list
                   if not osp.isfile(d.get('seg_map_path') or '')]
        if missing:
            raise ValueError(
                f'{type(self).__name__}: {len(missing)} of {len(data_list)} '
                f'images have no mask (data_prefix.seg_map_path='
                f'{self.data_prefix.get("seg_map_path")!r}, first missing '
                f'{missing[0]!r}); a segmentation dataset needs one per '
                'image')
        return data_list


def _tuples(kwargs: dict) -> dict:
    """Config lists back to the tuples :func:`make_digit_canvas_coco`
    takes."""
    return {k: tuple(v) if isinstance(v, list) else v
            for k, v in kwargs.items()}

