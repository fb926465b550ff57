"""Observers: record tensor statistics and turn them into qparams."""
from mmrazor_quant.compat.torch_ao import not_supported
from .base import BaseObserver
from .histogram import (
                        HistogramMSEObserver,
                        HistogramObserver,
                        PercentileObserver,
)
from .histogram_base import BaseHistogramObserver
from .kl import KLObserver
from .lsq import (
                        LSQObserver,
                        LSQPerChannelObserver,
                        LSQPlusObserver,
                        LSQPlusPerChannelObserver,
)
from .minmax import MinMaxObserver, PerChannelMinMaxObserver
from .moving_average import (
                        MovingAverageMinMaxObserver,
                        MovingAveragePerChannelMinMaxObserver,
)
from .mse import MSEObserver, PerChannelMSEObserver

__all__ = [
    'BaseObserver', 'BaseHistogramObserver', 'MinMaxObserver',
    'PerChannelMinMaxObserver', 'MovingAverageMinMaxObserver',
    'MovingAveragePerChannelMinMaxObserver', 'HistogramObserver',
    'PercentileObserver', 'HistogramMSEObserver', 'KLObserver',
    'MSEObserver', 'PerChannelMSEObserver', 'LSQObserver',
    'LSQPerChannelObserver', 'LSQPlusObserver', 'LSQPlusPerChannelObserver',
    'register_torch_observers'
]

#: Not supported: MMRazor registered torch.ao's observers by name.
register_torch_observers = not_supported(
    'register_torch_observers',
    "the observers of mmrazor_quant.models.observers (e.g. "
    "type='mmrazor_quant.MinMaxObserver'), which need no registration")
