"""Observers: record tensor statistics and turn them into qparams."""
from .base import BaseObserver
from .histogram import (HistogramMSEObserver, HistogramObserver,
                        PercentileObserver)
from .histogram_base import BaseHistogramObserver
from .kl import KLObserver
from .lsq import (LSQObserver, LSQPerChannelObserver, LSQPlusObserver,
                  LSQPlusPerChannelObserver)
from .minmax import MinMaxObserver, PerChannelMinMaxObserver
from .moving_average import (MovingAverageMinMaxObserver,
                             MovingAveragePerChannelMinMaxObserver)
from .mse import MSEObserver, PerChannelMSEObserver

__all__ = [
    'BaseObserver', 'BaseHistogramObserver', 'MinMaxObserver',
    'PerChannelMinMaxObserver', 'MovingAverageMinMaxObserver',
    'MovingAveragePerChannelMinMaxObserver', 'HistogramObserver',
    'PercentileObserver', 'HistogramMSEObserver', 'KLObserver',
    'MSEObserver', 'PerChannelMSEObserver', 'LSQObserver',
    'LSQPerChannelObserver', 'LSQPlusObserver', 'LSQPlusPerChannelObserver'
]
