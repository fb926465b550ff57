"""Datasets and transforms of mmrazor_quant.

Each dataset subclasses one of an OpenMMLab codebase's, so importing this
package imports none of them: a registry lookup of a name (a config's
``type='mmrazor_quant.MNIST5k'``) or an attribute access here
(``from mmrazor_quant.datasets import MNIST5k``) imports its module, and
with it its codebase (:mod:`mmrazor_quant.utils.codebase_imports`).
"""
import importlib

#: Public name -> the module (in this package) that defines it.
_EXPORTS = {
    'MNIST5k': 'mnist5k',
    'find_mnist5k_file': 'mnist5k_file',
    'load_mnist5k_arrays': 'mnist5k_file',
    'split_mnist5k_indices': 'mnist5k_file',
    'make_digit_canvas_coco': 'digit_canvas',
    'DigitCanvasCocoDataset': 'digit_canvas_dataset',
    'DigitCanvasSegDataset': 'seg_digits',
    'PoseDigitsDataset': 'pose_digits',
    'make_pose_digits_coco': 'pose_digits',
    'GrayToRGB': 'transforms',
    'CalibrationFolderDataset': 'calibration_folder',
}

__all__ = list(_EXPORTS)


def __getattr__(name: str):
    if name not in _EXPORTS:
        raise AttributeError(f'module {__name__!r} has no attribute {name!r}')
    from mmrazor_quant.utils.codebase_imports import import_lazy_name
    import_lazy_name(name, f'mmrazor_quant.datasets.{name}')
    return getattr(importlib.import_module(f'.{_EXPORTS[name]}', __name__),
                   name)


def __dir__():
    return sorted(list(globals()) + __all__)
