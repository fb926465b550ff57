"""Fake-quant modules and the functions they are built on."""
from .adaround import AdaRoundFakeQuantize
from .base import BaseFakeQuantize
from .fake_quantize import FakeQuantize
from .fixed_fake_quantize import FixedFakeQuantize
from .functional import (fake_quantize, fake_quantize_learnable,
                         round_half_away_from_zero)
from .learnable_fake_quantize import LearnableFakeQuantize, LSQPlusFakeQuantize
from .pact_fake_quantize import PACTFakeQuantize
from .qdrop import QDropFakeQuantize
from .utils import (check_calibrated, disable_fake_quant, disable_observer,
                    enable_fake_quant, enable_observer, iter_fake_quants,
                    named_fake_quants)

__all__ = [
    'BaseFakeQuantize', 'FakeQuantize', 'LearnableFakeQuantize',
    'LSQPlusFakeQuantize', 'PACTFakeQuantize', 'FixedFakeQuantize',
    'fake_quantize', 'fake_quantize_learnable', 'round_half_away_from_zero',
    'named_fake_quants', 'iter_fake_quants', 'enable_observer',
    'disable_observer', 'enable_fake_quant', 'disable_fake_quant',
    'check_calibrated', 'AdaRoundFakeQuantize', 'QDropFakeQuantize'
]
