"""Data transforms for the grayscale digits."""
from typing import Dict

import numpy as np
from mmcv.transforms import BaseTransform

from mmrazor_quant.registry import TRANSFORMS

__all__ = ['GrayToRGB']


@TRANSFORMS.register_module()
class GrayToRGB(BaseTransform):
    """Repeat a single-channel image into three identical channels.

    For backbones whose stem is fixed to three input channels, such as
    mmcls's ``MobileNetV2``. An ``img`` of shape (H, W) or (H, W, 1) becomes
    (H, W, 3) with the same dtype; an image that already has three channels
    passes through unchanged.

    Examples:
        >>> import numpy as np
        >>> GrayToRGB()(dict(img=np.zeros((28, 28, 1), np.uint8)))['img'].shape
        (28, 28, 3)

    Raises:
        ValueError: If ``img`` has a channel count other than 1 or 3.
    """

    def transform(self, results: Dict) -> Dict:
        """Repeat the channel of ``results['img']``.

        Args:
            results (dict): Holds ``img``.

        Returns:
            dict: The same dict with ``img`` of shape (H, W, 3).
        """
        img = results['img']
        if img.ndim == 2:
            img = img[..., None]
        channels = img.shape[-1]
        if channels == 1:
            img = np.repeat(img, 3, axis=-1)
        elif channels != 3:
            raise ValueError('GrayToRGB expects an image of shape (H, W), '
                             f'(H, W, 1) or (H, W, 3), got {img.shape}.')
        results['img'] = img
        results['img_shape'] = img.shape[:2]
        return results
