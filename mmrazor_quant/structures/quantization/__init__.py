from .qconfig import QConfigHandler
from .qparams import calculate_qparams
from .qscheme import PerChannel, PerTensor, QSchema, RoundingPolicy

__all__ = [
    'QSchema', 'QConfigHandler', 'PerTensor', 'PerChannel', 'RoundingPolicy',
    'calculate_qparams'
]
