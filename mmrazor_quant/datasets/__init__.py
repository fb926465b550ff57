"""Datasets and transforms of mmrazor_quant; importing registers them."""
from .calibration_folder import CalibrationFolderDataset
from .digit_canvas import make_digit_canvas_coco
from .digit_canvas_dataset import DigitCanvasCocoDataset
from .mnist5k import (
                      MNIST5k,
                      find_mnist5k_file,
                      load_mnist5k_arrays,
                      split_mnist5k_indices,
)
from .pose_digits import PoseDigitsDataset, make_pose_digits_coco
from .seg_digits import DigitCanvasSegDataset
from .transforms import GrayToRGB

__all__ = [
    'MNIST5k', 'GrayToRGB', 'find_mnist5k_file', 'load_mnist5k_arrays',
    'split_mnist5k_indices', 'DigitCanvasCocoDataset',
    'make_digit_canvas_coco', 'DigitCanvasSegDataset', 'PoseDigitsDataset',
    'make_pose_digits_coco', 'CalibrationFolderDataset'
]
