"""Fake-quant modules and the functions they are built on."""
from mmrazor_quant.compat.fake_quant_api import (
                                                 enable_param_learning,
                                                 enable_static_estimate,
                                                 enable_val,
)
from mmrazor_quant.compat.torch_ao import not_supported
from .adaround import AdaRoundFakeQuantize
from .base import BaseFakeQuantize
from .fake_quantize import FakeQuantize
from .fixed_fake_quantize import FixedFakeQuantize
from .functional import (
                                                 fake_quantize,
                                                 fake_quantize_learnable,
                                                 round_half_away_from_zero,
)
from .learnable_fake_quantize import LearnableFakeQuantize, LSQPlusFakeQuantize
from .pact_fake_quantize import PACTFakeQuantize
from .qdrop import QDropFakeQuantize
from .utils import (
                                                 check_calibrated,
                                                 disable_fake_quant,
                                                 disable_observer,
                                                 enable_fake_quant,
                                                 enable_observer,
                                                 iter_fake_quants,
                                                 named_fake_quants,
                                                 preserve_quant_state,
                                                 restore_switches,
                                                 save_switches,
)

__all__ = [
    'BaseFakeQuantize', 'FakeQuantize', 'LearnableFakeQuantize',
    'LSQPlusFakeQuantize', 'PACTFakeQuantize', 'FixedFakeQuantize',
    'fake_quantize', 'fake_quantize_learnable', 'round_half_away_from_zero',
    'named_fake_quants', 'iter_fake_quants', 'enable_observer',
    'disable_observer', 'enable_fake_quant', 'disable_fake_quant',
    'check_calibrated', 'AdaRoundFakeQuantize', 'QDropFakeQuantize',
    'enable_param_learning', 'enable_static_estimate', 'enable_val',
    'register_torch_fake_quants',
    'save_switches', 'restore_switches', 'preserve_quant_state'
]

#: Not supported: MMRazor registered torch.ao's fake quants by name.
register_torch_fake_quants = not_supported(
    'register_torch_fake_quants',
    "the fake quants of mmrazor_quant.models.fake_quants (e.g. "
    "type='mmrazor_quant.FakeQuantize'), which need no registration")
