"""GrayToRGB repeats one channel into three."""
import numpy as np
import pytest

from mmrazor_quant.datasets import GrayToRGB


def test_repeats_hw1_and_hw():
    img = np.arange(12, dtype=np.uint8).reshape(3, 4, 1)
    for given in (img, img[..., 0]):
        out = GrayToRGB()(dict(img=given))
        assert out['img'].shape == (3, 4, 3)
        assert out['img'].dtype == np.uint8
        assert out['img_shape'] == (3, 4)
        for c in range(3):
            np.testing.assert_array_equal(out['img'][..., c], img[..., 0])


def test_three_channels_pass_through():
    img = np.random.default_rng(0).integers(0, 255, (5, 5, 3), np.uint8)
    out = GrayToRGB()(dict(img=img.copy()))
    np.testing.assert_array_equal(out['img'], img)


def test_other_channel_counts_are_rejected():
    with pytest.raises(ValueError, match=r'got \(2, 2, 4\)'):
        GrayToRGB()(dict(img=np.zeros((2, 2, 4), np.uint8)))
