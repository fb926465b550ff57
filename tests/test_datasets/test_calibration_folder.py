"""CalibrationFolderDataset: the numbers it loads, batches and errors."""
import os.path as osp

import cv2
import numpy as np
import pytest
import torch
from mmengine.model import BaseDataPreprocessor
from mmengine.runner import Runner

from mmrazor_quant.datasets import CalibrationFolderDataset
from mmrazor_quant.registry import DATASETS


def _arrays(n, shape, seed=0, dtype=np.float32):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(shape).astype(dtype) for _ in range(n)]


def _save_npy(folder, arrays):
    folder.mkdir(parents=True, exist_ok=True)
    for i, a in enumerate(arrays):
        np.save(folder / f'{i:04d}.npy', a)


def test_npy_folder_loads_the_arrays_in_name_order(tmp_path):
    arrays = _arrays(5, (3, 4, 6))
    _save_npy(tmp_path, arrays)
    (tmp_path / 'README.txt').write_text('not a sample')
    ds = CalibrationFolderDataset(str(tmp_path), shape=(3, 4, 6))
    assert len(ds) == 5
    for i, a in enumerate(arrays):
        item = ds[i]
        assert set(item) == {'inputs'}
        assert item['inputs'].dtype == torch.float32
        np.testing.assert_array_equal(item['inputs'].numpy(), a)


def test_leading_batch_axis_of_one_is_dropped(tmp_path):
    arrays = _arrays(2, (1, 3, 5))
    _save_npy(tmp_path, arrays)
    ds = CalibrationFolderDataset(str(tmp_path), shape=(3, -1))
    np.testing.assert_array_equal(ds[1]['inputs'].numpy(), arrays[1][0])


def test_bin_read_with_shape_and_dtype(tmp_path):
    arrays = _arrays(3, (2, 3, 4), dtype=np.float16)
    for i, a in enumerate(arrays):
        a.tofile(tmp_path / f'{i}.bin')
    ds = CalibrationFolderDataset(
        str(tmp_path), shape=(2, None, 4), dtype='float16')
    for i, a in enumerate(arrays):
        assert ds[i]['inputs'].dtype == torch.float16
        np.testing.assert_array_equal(ds[i]['inputs'].numpy(), a)


def test_integer_inputs_keep_their_dtype(tmp_path):
    ids = np.arange(12, dtype=np.int64).reshape(3, 4)
    np.save(tmp_path / 'a.npy', ids)
    ds = CalibrationFolderDataset(str(tmp_path), dtype='int64')
    assert ds[0]['inputs'].dtype == torch.int64
    np.testing.assert_array_equal(ds[0]['inputs'].numpy(), ids)


def test_several_inputs_by_subfolder(tmp_path):
    xs, ys = _arrays(3, (2, 5), 1), _arrays(3, (7, ), 2)
    _save_npy(tmp_path / 'x', xs)
    _save_npy(tmp_path / 'y', ys)
    ds = CalibrationFolderDataset(
        str(tmp_path), input_names=['x', 'y'], shape=dict(x=(2, 5), y=(7, )))
    assert len(ds) == 3
    for i in range(3):
        inputs = ds[i]['inputs']
        assert list(inputs) == ['x', 'y']
        np.testing.assert_array_equal(inputs['x'].numpy(), xs[i])
        np.testing.assert_array_equal(inputs['y'].numpy(), ys[i])


def test_several_inputs_by_npz(tmp_path):
    xs, ys = _arrays(2, (4, ), 1), _arrays(2, (3, 3), 2, np.float64)
    for i in range(2):
        np.savez(tmp_path / f's{i}.npz', image=xs[i], scale=ys[i])
    ds = CalibrationFolderDataset(
        str(tmp_path),
        input_names=['image', 'scale'],
        dtype=dict(image='float32', scale='float64'))
    for i in range(2):
        np.testing.assert_array_equal(ds[i]['inputs']['image'].numpy(), xs[i])
        np.testing.assert_array_equal(ds[i]['inputs']['scale'].numpy(), ys[i])


def _write_images(folder, n=2, hw=(9, 13)):
    rng = np.random.default_rng(3)
    images = [rng.integers(0, 256, hw + (3, ), np.uint8) for _ in range(n)]
    for i, img in enumerate(images):
        cv2.imwrite(str(folder / f'{i}.png'), img)  # lossless, BGR on disk
    return images


@pytest.mark.parametrize('layout,color', [('NCHW', 'RGB'), ('NHWC', 'BGR')])
def test_images_with_preprocessing_spec(tmp_path, layout, color):
    bgr = _write_images(tmp_path)
    mean, std = (10., 20., 30.), (2., 4., 8.)
    ds = CalibrationFolderDataset(
        str(tmp_path),
        image=dict(size=(6, 8), mean=mean, std=std, layout=layout,
                   color=color))
    for i, img in enumerate(bgr):
        if color == 'RGB':
            img = img[..., ::-1]
        resized = cv2.resize(
            np.ascontiguousarray(img), (8, 6), interpolation=cv2.INTER_LINEAR)
        want = (resized.astype(np.float32) - np.float32(mean)) / np.float32(
            std)
        if layout == 'NCHW':
            want = want.transpose(2, 0, 1)
        got = ds[i]['inputs']
        assert got.dtype == torch.float32
        np.testing.assert_allclose(got.numpy(), want, rtol=0, atol=1e-6)


def test_batches_through_runner_loader_and_data_preprocessor(tmp_path):
    xs, ys = _arrays(6, (3, 4), 4), _arrays(6, (2, ), 5)
    _save_npy(tmp_path / 'a', xs)
    _save_npy(tmp_path / 'b', ys)
    loader = Runner.build_dataloader(
        dict(
            batch_size=4,
            num_workers=0,
            sampler=dict(type='DefaultSampler', shuffle=False),
            collate_fn=dict(type='default_collate'),
            dataset=dict(
                type='mmrazor_quant.CalibrationFolderDataset',
                data_root=str(tmp_path),
                input_names=['a', 'b'])))
    batches = [BaseDataPreprocessor()(b, False) for b in loader]
    assert [b['inputs']['a'].shape for b in batches] == [(4, 3, 4), (2, 3, 4)]
    np.testing.assert_array_equal(batches[0]['inputs']['a'].numpy(),
                                  np.stack(xs[:4]))
    np.testing.assert_array_equal(batches[1]['inputs']['b'].numpy(),
                                  np.stack(ys[4:]))


def test_registered_and_max_samples(tmp_path):
    _save_npy(tmp_path, _arrays(4, (2, )))
    ds = DATASETS.build(
        dict(type='mmrazor_quant.CalibrationFolderDataset',
             data_root=str(tmp_path),
             max_samples=3))
    assert len(ds) == 3


# errors: each names the folder or file --------------------------------------


def test_empty_folder(tmp_path):
    (tmp_path / 'notes.txt').write_text('x')
    with pytest.raises(ValueError,
                       match=f'{tmp_path} holds no calibration samples'):
        CalibrationFolderDataset(str(tmp_path))


def test_missing_folder(tmp_path):
    with pytest.raises(FileNotFoundError, match='is not a folder'):
        CalibrationFolderDataset(str(tmp_path / 'nope'))


def test_wrong_shape(tmp_path):
    _save_npy(tmp_path, _arrays(2, (3, 4)) + _arrays(1, (3, 5)))
    bad = osp.join(tmp_path, '0002.npy')
    with pytest.raises(ValueError,
                       match=rf'{bad} has shape \(3, 5\), expected \(3, 4\)'):
        CalibrationFolderDataset(str(tmp_path), shape=(3, 4))


def test_wrong_dtype(tmp_path):
    _save_npy(tmp_path, _arrays(1, (3, )) + _arrays(1, (3, ), 0, np.float64))
    bad = osp.join(tmp_path, '0001.npy')
    with pytest.raises(ValueError,
                       match=f'{bad} holds float64, expected float32'):
        CalibrationFolderDataset(str(tmp_path))


def test_bin_of_wrong_size(tmp_path):
    np.zeros(10, np.float32).tofile(tmp_path / 'a.bin')
    bad = osp.join(tmp_path, 'a.bin')
    with pytest.raises(ValueError,
                       match=rf'{bad} holds 40 bytes, which is not a float32 '
                       r'array of shape \(3, 4\) \(48 bytes\)'):
        CalibrationFolderDataset(str(tmp_path), shape=(3, 4))


def test_bin_without_shape(tmp_path):
    np.zeros(4, np.float32).tofile(tmp_path / 'a.bin')
    with pytest.raises(ValueError, match=r'a.bin is raw .bin; give its'):
        CalibrationFolderDataset(str(tmp_path))


@pytest.mark.parametrize('value', [np.nan, np.inf, -np.inf])
def test_nan_or_inf(tmp_path, value):
    arrays = _arrays(3, (4, ))
    arrays[1][2] = value
    _save_npy(tmp_path, arrays)
    bad = osp.join(tmp_path, '0001.npy')
    with pytest.raises(ValueError, match=f'{bad} holds 1 NaN/Inf values'):
        CalibrationFolderDataset(str(tmp_path))


def test_subfolders_that_do_not_match(tmp_path):
    _save_npy(tmp_path / 'x', _arrays(3, (2, )))
    _save_npy(tmp_path / 'y', _arrays(2, (2, )))
    with pytest.raises(ValueError, match=r"'x' and 'y' differ in \['0002'\]"):
        CalibrationFolderDataset(str(tmp_path), input_names=['x', 'y'])


def test_npz_without_an_input(tmp_path):
    np.savez(tmp_path / 's.npz', x=np.zeros(2, np.float32))
    bad = osp.join(tmp_path, 's.npz')
    with pytest.raises(ValueError,
                       match=rf"{bad} has no array for input 'y'"):
        CalibrationFolderDataset(str(tmp_path), input_names=['x', 'y'])


def test_images_without_spec_and_undecodable(tmp_path):
    _write_images(tmp_path, n=1)
    with pytest.raises(ValueError, match=r'0.png is an image but no `image`'):
        CalibrationFolderDataset(str(tmp_path))
    (tmp_path / '1.jpg').write_bytes(b'not a jpeg')
    with pytest.raises(ValueError, match=r'cannot decode the image .*1.jpg'):
        CalibrationFolderDataset(str(tmp_path), image=dict(size=(4, 4)))


@pytest.mark.parametrize('image,match', [
    (dict(size=(4, )), r'`image.size` must be \(height, width\)'),
    (dict(size=(4, 4), layout='CHW'), r'`image.layout` must be one of'),
    (dict(size=(4, 4), color='GRAY'), r'`image.color` must be one of'),
    (dict(size=(4, 4), std=0), r'`image.std` must be positive'),
    (dict(size=(4, 4), resize='keep'), r"unknown `image` keys \['resize'\]"),
])
def test_bad_image_spec(tmp_path, image, match):
    _write_images(tmp_path, n=1)
    with pytest.raises(ValueError, match=match):
        CalibrationFolderDataset(str(tmp_path), image=image)
