"""TQT (Trained Quantization Thresholds, Jain et al., 2020) from user code.

Importing this package registers ``PowerOfTwoMaxObserver`` and
``TQTFakeQuantize`` in mmrazor_quant's MODELS.
"""
from .fake_quantize import TQTFakeQuantize, tqt_fake_quantize
from .observer import PowerOfTwoMaxObserver

__all__ = ['PowerOfTwoMaxObserver', 'TQTFakeQuantize', 'tqt_fake_quantize']
