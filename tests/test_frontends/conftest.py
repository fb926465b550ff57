import warnings

import numpy as np
import pytest

from .onnx_toys import TOY_SHAPE, export_toy


@pytest.fixture(scope='session')
def toy_onnx(tmp_path_factory) -> str:
    """The toy at opset 17 (LayerNormalization is one op)."""
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        return export_toy(str(tmp_path_factory.mktemp('toy') / 'toy.onnx'))


@pytest.fixture(scope='session')
def toy_onnx_13(tmp_path_factory) -> str:
    """The toy at opset 13: LayerNorm written out as nine ops."""
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        return export_toy(str(tmp_path_factory.mktemp('toy13') /
                              'toy13.onnx'), opset=13)


@pytest.fixture(scope='session')
def calib_dir(tmp_path_factory) -> str:
    """32 seeded ``.npy`` samples of the toy's input."""
    root = tmp_path_factory.mktemp('calib')
    rng = np.random.RandomState(0)
    for i in range(32):
        np.save(root / f'{i:03d}.npy',
                rng.randn(*TOY_SHAPE).astype(np.float32))
    return str(root)
