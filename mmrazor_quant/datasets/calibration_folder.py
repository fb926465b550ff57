"""Calibration data as a folder of tensors or images, as PPQ and NNCF take it.

A user who quantizes a model file has the model's inputs, not an OpenMMLab
dataset: arrays dumped from their own pipeline (``.npy``, ``.npz``, raw
``.bin``) or the images themselves with the model's preprocessing.
:class:`CalibrationFolderDataset` reads such a folder and gives samples that
mmengine's default collate batches and ``PTQLoop`` feeds to the model.

Layouts (files are taken in sorted name order):

* one input: the files lie in ``data_root``;
* several inputs (``input_names`` given): either one subfolder per input
  name, the samples matched by file stem (``x/0001.npy`` with
  ``y/0001.npy``), or ``.npz`` files in ``data_root`` holding one array per
  input name.
"""
import os
import os.path as osp
from typing import Dict, List, Mapping, Optional, Sequence, Union

import numpy as np
import torch
from torch.utils.data import Dataset

from mmrazor_quant.registry import DATASETS

__all__ = ['CalibrationFolderDataset', 'IMAGE_SUFFIXES', 'ARRAY_SUFFIXES']

ARRAY_SUFFIXES = ('.npy', '.npz', '.bin')
IMAGE_SUFFIXES = ('.jpg', '.jpeg', '.png', '.bmp')
_LAYOUTS = ('NCHW', 'NHWC')
_COLOR_ORDERS = ('RGB', 'BGR')

ShapeSpec = Optional[Sequence[Optional[int]]]


@DATASETS.register_module()
class CalibrationFolderDataset(Dataset):
    """Samples read from a folder of arrays or images.

    Each item is ``dict(inputs=tensor)`` for a single unnamed input, or
    ``dict(inputs={name: tensor, ...})`` when ``input_names`` is given, so
    ``default_collate`` stacks a batch per input and the model's data
    preprocessor passes ``inputs`` on. Every file is read and checked when
    the dataset is built, before any model is calibrated: an empty folder,
    an array of the wrong shape or dtype, a ``.bin`` of the wrong size, an
    unreadable image and a NaN or Inf value each raise an error naming the
    folder or file.

    Args:
        data_root (str): The folder.
        input_names (Sequence[str], optional): The model's input names; with
            them every sample is a dict by name (subfolders or ``.npz``
            keys). Defaults to None (one input, files in ``data_root``).
        shape (Sequence[int] | dict, optional): Shape of one sample, without
            the batch axis; ``-1`` or None for an axis of any size. A
            leading batch axis of 1 in a file is dropped. Needed for
            ``.bin`` files (at most one free axis there). A dict gives it
            per input name. Defaults to None (any shape).
        dtype (str | dict): The dtype of the arrays (``.npy``/``.npz`` are
            checked against it, ``.bin`` are read as it); a dict gives it
            per input name. Defaults to ``'float32'``.
        image (dict, optional): How images are turned into the model's
            input: ``size=(h, w)`` (required), ``mean`` and ``std`` per
            channel in pixel units (0..255; defaults 0 and 1), ``layout``
            ``'NCHW'`` or ``'NHWC'`` (default ``'NCHW'``), ``color``
            ``'RGB'`` or ``'BGR'``, the order the model expects (default
            ``'RGB'``). Images come out float32. Defaults to None (images
            are not read).
        max_samples (int, optional): Use only the first ``max_samples``
            samples. Defaults to None (all).

    Raises:
        FileNotFoundError: If ``data_root`` or an input's subfolder does
            not exist.
        ValueError: Naming the folder, file or argument, for an empty
            folder, a bad argument, or a sample of the wrong shape, dtype,
            size, or with a NaN/Inf.

    Example:
        >>> calibrate_dataloader = dict(
        ...     batch_size=8, num_workers=0,
        ...     sampler=dict(type='DefaultSampler', shuffle=False),
        ...     collate_fn=dict(type='default_collate'),
        ...     dataset=dict(type='CalibrationFolderDataset',
        ...                  data_root='calib/', shape=(3, 224, 224)))
    """

    def __init__(self,
                 data_root: str,
                 input_names: Optional[Sequence[str]] = None,
                 shape: Union[ShapeSpec, Mapping[str, ShapeSpec]] = None,
                 dtype: Union[str, Mapping[str, str]] = 'float32',
                 image: Optional[dict] = None,
                 max_samples: Optional[int] = None) -> None:
        if not osp.isdir(data_root):
            raise FileNotFoundError(
                f'CalibrationFolderDataset: data_root {data_root!r} is not '
                'a folder')
        self.data_root = data_root
        self.input_names = _check_input_names(input_names)
        keys = self.input_names or [None]
        self.shapes = {k: _per_input(shape, k, 'shape') for k in keys}
        self.dtypes = {
            k: _check_dtype(_per_input(dtype, k, 'dtype'), k)
            for k in keys
        }
        self.image = _check_image_spec(image)
        self.samples = self._list_samples()
        if max_samples is not None:
            if isinstance(max_samples, bool) or not isinstance(
                    max_samples, int) or max_samples < 1:
                raise ValueError('CalibrationFolderDataset: max_samples '
                                 f'must be an int >= 1, got {max_samples!r}')
            self.samples = self.samples[:max_samples]
        for index in range(len(self.samples)):
            self._load(index)  # every file checked before calibration

    def __len__(self) -> int:
        return len(self.samples)

    def __getitem__(self, index: int) -> dict:
        arrays = self._load(index)
        tensors = {k: torch.from_numpy(a) for k, a in arrays.items()}
        if self.input_names is None:
            return dict(inputs=tensors[None])
        return dict(inputs=tensors)

    # listing --------------------------------------------------------------

    def _list_samples(self) -> List[Dict[Optional[str], str]]:
        """Each sample as ``{input name: file}`` (``None`` for one input)."""
        names = self.input_names
        if names is None:
            files = _data_files(self.data_root, self.data_root)
            return [{None: f} for f in files]
        subfolders = [osp.join(self.data_root, n) for n in names]
        if any(osp.isdir(d) for d in subfolders):
            return _match_subfolders(self.data_root, names, subfolders)
        files = _data_files(self.data_root, self.data_root)
        not_npz = [f for f in files if not f.endswith('.npz')]
        if not_npz:
            raise ValueError(
                f'CalibrationFolderDataset: {self.data_root} has no '
                f'subfolder per input name ({", ".join(names)}), so every '
                f'sample must be an .npz keyed by input name, but '
                f'{not_npz[0]} is not')
        return [{n: f for n in names} for f in files]

    # loading --------------------------------------------------------------

    def _load(self, index: int) -> Dict[Optional[str], np.ndarray]:
        return {
            key: self._load_one(path, key)
            for key, path in self.samples[index].items()
        }

    def _load_one(self, path: str, key: Optional[str]) -> np.ndarray:
        shape, dtype = self.shapes[key], self.dtypes[key]
        suffix = osp.splitext(path)[1].lower()
        if suffix in IMAGE_SUFFIXES:
            if self.image is None:
                raise ValueError(
                    f'CalibrationFolderDataset: {path} is an image but no '
                    '`image` preprocessing spec (size, mean, std, layout, '
                    'color) was given')
            array = _read_image(path, self.image)
        elif suffix == '.bin':
            array = _read_bin(path, shape, dtype)
        else:
            array = _read_array(path, key)
            if array.dtype != dtype:
                raise ValueError(
                    f'CalibrationFolderDataset: {path} holds {array.dtype}, '
                    f'expected {dtype} (`dtype`)')
        array = _check_shape(array, shape, path)
        if array.dtype.kind in 'fc' and not np.isfinite(array).all():
            bad = int((~np.isfinite(array)).sum())
            raise ValueError(f'CalibrationFolderDataset: {path} holds {bad} '
                             'NaN/Inf values')
        return np.ascontiguousarray(array)


# argument checks ------------------------------------------------------------


def _check_input_names(names: Optional[Sequence[str]]) -> Optional[List[str]]:
    if names is None:
        return None
    if isinstance(names, str) or not names or not all(
            isinstance(n, str) and n for n in names):
        raise ValueError('CalibrationFolderDataset: input_names must be a '
                         f'non-empty list of names, got {names!r}')
    if len(set(names)) != len(names):
        raise ValueError('CalibrationFolderDataset: input_names has '
                         f'duplicates: {list(names)}')
    return list(names)


def _per_input(value, key: Optional[str], arg: str):
    """``value`` itself, or its entry for input ``key`` if it is a dict."""
    if not isinstance(value, Mapping):
        return value
    if key is None:
        raise ValueError(f'CalibrationFolderDataset: `{arg}` is a dict by '
                         'input name but input_names is not given')
    if key not in value:
        raise ValueError(f'CalibrationFolderDataset: `{arg}` has no entry '
                         f'for input {key!r} (has {sorted(value)})')
    return value[key]


def _check_dtype(dtype, key: Optional[str]) -> np.dtype:
    try:
        return np.dtype(dtype)
    except TypeError as e:
        where = f' of input {key!r}' if key else ''
        raise ValueError(f'CalibrationFolderDataset: `dtype`{where} is not '
                         f'a numpy dtype: {dtype!r}') from e


def _check_image_spec(spec: Optional[dict]) -> Optional[dict]:
    if spec is None:
        return None
    unknown = set(spec) - {'size', 'mean', 'std', 'layout', 'color'}
    if unknown:
        raise ValueError('CalibrationFolderDataset: unknown `image` keys '
                         f'{sorted(unknown)} (known: size, mean, std, '
                         'layout, color)')
    size = spec.get('size')
    if size is None or len(size) != 2 or not all(
            isinstance(s, int) and s > 0 for s in size):
        raise ValueError('CalibrationFolderDataset: `image.size` must be '
                         f'(height, width), got {size!r}')
    layout = spec.get('layout', 'NCHW')
    color = spec.get('color', 'RGB')
    if layout not in _LAYOUTS:
        raise ValueError(f'CalibrationFolderDataset: `image.layout` must be '
                         f'one of {_LAYOUTS}, got {layout!r}')
    if color not in _COLOR_ORDERS:
        raise ValueError(f'CalibrationFolderDataset: `image.color` must be '
                         f'one of {_COLOR_ORDERS}, got {color!r}')
    mean = np.broadcast_to(
        np.asarray(spec.get('mean', 0.), np.float32), (3, )).copy()
    std = np.broadcast_to(
        np.asarray(spec.get('std', 1.), np.float32), (3, )).copy()
    if (std <= 0).any():
        raise ValueError('CalibrationFolderDataset: `image.std` must be '
                         f'positive, got {spec.get("std")!r}')
    return dict(size=tuple(size), mean=mean, std=std, layout=layout,
                color=color)


# listing helpers -------------------------------------------------------------


def _data_files(folder: str, root: str) -> List[str]:
    """The data files of ``folder`` in sorted order; an error if none."""
    names = sorted(
        n for n in os.listdir(folder)
        if not n.startswith('.') and osp.isfile(osp.join(folder, n))
        and osp.splitext(n)[1].lower() in ARRAY_SUFFIXES + IMAGE_SUFFIXES)
    if not names:
        raise ValueError(
            f'CalibrationFolderDataset: {folder} holds no calibration '
            f'samples (files ending in '
            f'{", ".join(ARRAY_SUFFIXES + IMAGE_SUFFIXES)})')
    return [osp.join(folder, n) for n in names]


def _match_subfolders(root: str, names: List[str],
                      folders: List[str]) -> List[Dict[str, str]]:
    """Pair the files of each input's subfolder by stem."""
    by_input = {}
    for name, folder in zip(names, folders):
        if not osp.isdir(folder):
            raise FileNotFoundError(
                f'CalibrationFolderDataset: {root} has subfolders per input '
                f'but none for input {name!r} ({folder})')
        files = _data_files(folder, root)
        by_input[name] = {osp.splitext(osp.basename(f))[0]: f for f in files}
    stems = sorted(by_input[names[0]])
    for name in names[1:]:
        if sorted(by_input[name]) != stems:
            odd = sorted(set(stems) ^ set(by_input[name]))
            raise ValueError(
                f'CalibrationFolderDataset: the subfolders of {root} do not '
                f'hold the same samples: {names[0]!r} and {name!r} differ '
                f'in {odd[:5]}')
    return [{n: by_input[n][s] for n in names} for s in stems]


# readers ---------------------------------------------------------------------


def _read_array(path: str, key: Optional[str]) -> np.ndarray:
    try:
        loaded = np.load(path, allow_pickle=False)
    except (ValueError, OSError) as e:
        raise ValueError(
            f'CalibrationFolderDataset: cannot read {path}: {e}') from e
    if not isinstance(loaded, np.lib.npyio.NpzFile):
        return loaded
    with loaded:
        if key is None:
            if len(loaded.files) != 1:
                raise ValueError(
                    f'CalibrationFolderDataset: {path} holds arrays '
                    f'{loaded.files}; give input_names to say which is '
                    'which')
            return loaded[loaded.files[0]]
        if key not in loaded.files:
            raise ValueError(f'CalibrationFolderDataset: {path} has no '
                             f'array for input {key!r} (has {loaded.files})')
        return loaded[key]


def _read_bin(path: str, shape: ShapeSpec, dtype: np.dtype) -> np.ndarray:
    if shape is None:
        raise ValueError(f'CalibrationFolderDataset: {path} is raw .bin; '
                         'give its `shape` (and `dtype`)')
    dims = [-1 if d is None else int(d) for d in shape]
    if dims.count(-1) > 1:
        raise ValueError(f'CalibrationFolderDataset: `shape` {tuple(shape)} '
                         'leaves more than one axis free, which a raw .bin '
                         f'cannot resolve ({path})')
    data = np.fromfile(path, dtype=dtype)
    known = int(np.prod([d for d in dims if d != -1], dtype=np.int64))
    size_ok = data.size % known == 0 if -1 in dims else data.size == known
    if not size_ok or data.size == 0:
        raise ValueError(
            f'CalibrationFolderDataset: {path} holds '
            f'{osp.getsize(path)} bytes, which is not a {dtype} array of '
            f'shape {tuple(shape)} ({known * dtype.itemsize} bytes'
            f'{" times an axis" if -1 in dims else ""})')
    return data.reshape(dims)


def _read_image(path: str, spec: dict) -> np.ndarray:
    import cv2  # only image folders need OpenCV
    image = cv2.imread(path, cv2.IMREAD_COLOR)
    if image is None:
        raise ValueError(f'CalibrationFolderDataset: cannot decode the '
                         f'image {path}')
    if spec['color'] == 'RGB':
        image = cv2.cvtColor(image, cv2.COLOR_BGR2RGB)
    height, width = spec['size']
    image = cv2.resize(image, (width, height), interpolation=cv2.INTER_LINEAR)
    image = (image.astype(np.float32) - spec['mean']) / spec['std']
    if spec['layout'] == 'NCHW':
        image = image.transpose(2, 0, 1)
    return image


def _check_shape(array: np.ndarray, shape: ShapeSpec,
                 path: str) -> np.ndarray:
    """``array`` without a leading batch axis of 1, if it fits ``shape``."""
    if shape is None:
        return array
    if array.ndim == len(shape) + 1 and array.shape[0] == 1:
        array = array[0]
    fits = array.ndim == len(shape) and all(
        d is None or d == -1 or d == a for d, a in zip(shape, array.shape))
    if not fits:
        raise ValueError(f'CalibrationFolderDataset: {path} has shape '
                         f'{array.shape}, expected {tuple(shape)} (`shape`, '
                         'one sample without the batch axis)')
    return array
