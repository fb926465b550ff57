"""Refuse a checkpoint whose tensors do not fit the model.

mmengine's ``load_checkpoint`` only *warns* about missing or unexpected keys
and skips tensors of the wrong shape, so a checkpoint of another model loads
into a randomly initialised network and quantizes it without complaint.
:func:`check_state_dict_matches` turns that into an error that names where
the checkpoint came from.
"""
from typing import Dict, List, Mapping

import torch
from torch import nn

__all__ = ['check_state_dict_matches', 'strip_wrapper_prefix']

# How many offending keys an error message lists.
_SHOWN = 3


def strip_wrapper_prefix(state_dict: Mapping[str, torch.Tensor],
                         prefix: str = 'module.') -> Dict[str, torch.Tensor]:
    """Drop the prefix a (Distributed)DataParallel wrapper adds to keys."""
    if state_dict and all(k.startswith(prefix) for k in state_dict):
        return {k[len(prefix):]: v for k, v in state_dict.items()}
    return dict(state_dict)


def _listed(keys: List[str]) -> str:
    more = f' and {len(keys) - _SHOWN} more' if len(keys) > _SHOWN else ''
    return ', '.join(repr(k) for k in keys[:_SHOWN]) + more


def check_state_dict_matches(model: nn.Module,
                             state_dict: Mapping[str, torch.Tensor],
                             source: str,
                             compare_shapes: bool = True) -> None:
    """Raise if ``state_dict`` does not hold exactly ``model``'s tensors.

    Args:
        model (nn.Module): The model the tensors are meant for.
        state_dict (Mapping[str, Tensor]): The checkpoint's tensors.
        source (str): Where they come from, for the message, e.g.
            ``"model.float_checkpoint 'float.pth'"``.
        compare_shapes (bool): Also require equal shapes. Off for quantized
            models, whose observers size their statistics on loading.

    Raises:
        ValueError: On missing or unexpected keys or a shape mismatch; the
            message names ``source``, the model class and the first keys.
    """
    expected = model.state_dict()
    missing = [k for k in expected if k not in state_dict]
    unexpected = [k for k in state_dict if k not in expected]
    reshaped = [
        f'{k} {tuple(state_dict[k].shape)} vs {tuple(v.shape)}'
        for k, v in expected.items()
        if compare_shapes and k in state_dict
        and hasattr(state_dict[k], 'shape')
        and tuple(state_dict[k].shape) != tuple(v.shape)
    ]
    problems = []
    if missing:
        problems.append(f'{len(missing)} missing keys ({_listed(missing)})')
    if unexpected:
        problems.append(
            f'{len(unexpected)} unexpected keys ({_listed(unexpected)})')
    if reshaped:
        problems.append(
            f'{len(reshaped)} shape mismatches ({_listed(reshaped)})')
    if problems:
        raise ValueError(
            f'{source} does not fit {type(model).__name__}: '
            f'{"; ".join(problems)}. Is it a checkpoint of another model?')
