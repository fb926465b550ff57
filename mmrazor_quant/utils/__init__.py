"""Utilities of mmrazor_quant."""
from .checkpoint import (checkpoint_safe_globals,
                         register_checkpoint_safe_globals)

__all__ = ['checkpoint_safe_globals', 'register_checkpoint_safe_globals']
