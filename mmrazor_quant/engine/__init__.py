"""Runner loops and distributed helpers of mmrazor_quant.

Importing it registers the loops in :data:`mmrazor_quant.registry.LOOPS`.
"""
from .dist import setup_cpu_dist, teardown_dist
from .runner import (
                     LSQEpochBasedLoop,
                     PTQLoop,
                     QATEpochBasedLoop,
                     QATIterBasedLoop,
                     QATValLoop,
                     calibrate,
)

__all__ = [
    'PTQLoop', 'QATEpochBasedLoop', 'LSQEpochBasedLoop', 'QATIterBasedLoop',
    'QATValLoop', 'calibrate', 'setup_cpu_dist', 'teardown_dist'
]
