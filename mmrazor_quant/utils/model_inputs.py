"""A batch of model inputs: one tensor, or a dict of tensors by input name
(a model with several inputs, e.g. an ONNX file's ``image`` and
``im_info``), with the samples along the first axis of each.

The PTQ passes and the parity pipeline draw, split and join batches
through these functions, so a model with several inputs goes through them
as one with a single input does.
"""
from typing import Dict, Iterable, List, Union

import numpy as np
import torch
from torch import Tensor

__all__ = ['Inputs', 'num_samples', 'cat_inputs', 'split_inputs',
           'select_samples', 'inputs_to_numpy', 'inputs_to']

#: One tensor, or tensors by input name sharing their first axis.
Inputs = Union[Tensor, Dict[str, Tensor]]


def num_samples(inputs: Inputs) -> int:
    """The length of the first axis (of every input, checked).

    Raises:
        ValueError: If the inputs of a dict hold different numbers of
            samples, naming them.
    """
    if isinstance(inputs, Tensor):
        return len(inputs)
    counts = {name: len(t) for name, t in inputs.items()}
    if len(set(counts.values())) != 1:
        raise ValueError(f'the inputs hold different numbers of samples: '
                         f'{counts}')
    return next(iter(counts.values()))


def cat_inputs(batches: Iterable[Inputs]) -> Inputs:
    """The batches joined along their samples.

    Raises:
        ValueError: If there is no batch, or the batches do not name the
            same inputs.
    """
    batches = list(batches)
    if not batches:
        raise ValueError('no batch to join')
    if isinstance(batches[0], Tensor):
        return torch.cat(batches)
    names = list(batches[0])
    for batch in batches:
        if not isinstance(batch, dict) or list(batch) != names:
            other = list(batch) if isinstance(batch, dict) else \
                type(batch).__name__
            raise ValueError(f'batches of different inputs: {names} and '
                             f'{other}')
    return {n: torch.cat([b[n] for b in batches]) for n in names}


def split_inputs(inputs: Inputs, size: int) -> List[Inputs]:
    """Consecutive chunks of ``size`` samples (the last may be shorter)."""
    if isinstance(inputs, Tensor):
        return list(inputs.split(size))
    total = num_samples(inputs)
    return [select_samples(inputs, slice(i, i + size))
            for i in range(0, total, size)]


def select_samples(inputs: Inputs, index: Union[slice, Tensor]) -> Inputs:
    """``inputs[index]`` of every input."""
    if isinstance(inputs, Tensor):
        return inputs[index]
    return {n: t[index] for n, t in inputs.items()}


def inputs_to(inputs: Inputs, dtype: torch.dtype) -> Inputs:
    """The floating-point inputs cast to ``dtype`` (integer inputs, such
    as token ids, keep theirs), contiguous."""
    if isinstance(inputs, Tensor):
        cast = inputs.to(dtype) if inputs.is_floating_point() else inputs
        return cast.contiguous()
    return {n: inputs_to(t, dtype) for n, t in inputs.items()}


def inputs_to_numpy(
        inputs: Inputs) -> Union[np.ndarray, Dict[str, np.ndarray]]:
    """The arrays a runtime is fed (by input name for a dict)."""
    if isinstance(inputs, Tensor):
        return inputs.detach().cpu().numpy()
    return {n: t.detach().cpu().numpy() for n, t in inputs.items()}
