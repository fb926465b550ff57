"""Utilities of mmrazor_quant."""
from mmrazor_quant.registry import register_all_modules
from .checkpoint import (
                         checkpoint_safe_globals,
                         read_checkpoint,
                         register_checkpoint_safe_globals,
)
from .config_checks import check_loop_cfgs, load_config
from .state_dict_check import check_state_dict_matches, strip_wrapper_prefix

__all__ = [
    'checkpoint_safe_globals', 'register_checkpoint_safe_globals',
    'read_checkpoint',
    'check_loop_cfgs', 'load_config', 'check_state_dict_matches',
    'strip_wrapper_prefix', 'register_all_modules'
]
