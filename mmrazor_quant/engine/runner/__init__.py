"""PTQ and QAT loops for mmengine's Runner."""
from .calibration import calibrate
from .quantization_loops import (
                                 LSQEpochBasedLoop,
                                 PTQLoop,
                                 QATEpochBasedLoop,
                                 QATIterBasedLoop,
                                 QATValLoop,
)

__all__ = [
    'PTQLoop', 'QATEpochBasedLoop', 'LSQEpochBasedLoop', 'QATIterBasedLoop',
    'QATValLoop', 'calibrate'
]
