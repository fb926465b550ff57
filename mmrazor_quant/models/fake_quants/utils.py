"""Switches over every fake quant in a module tree (used by the loops)."""
from typing import Iterator, Tuple

from torch import nn

from .base import BaseFakeQuantize

__all__ = [
    'named_fake_quants', 'iter_fake_quants', 'enable_observer',
    'disable_observer', 'enable_fake_quant', 'disable_fake_quant',
    'check_calibrated'
]


def named_fake_quants(
        module: nn.Module) -> Iterator[Tuple[str, BaseFakeQuantize]]:
    """Yield ``(qualified name, fake quant)`` for each fake quant, once
    each, in ``named_modules`` order (``module`` itself included).
    """
    for name, child in module.named_modules():
        if isinstance(child, BaseFakeQuantize):
            yield name, child


def iter_fake_quants(module: nn.Module) -> Iterator[BaseFakeQuantize]:
    """Yield each fake quant in ``module`` (itself included), once each."""
    for _, fake_quant in named_fake_quants(module):
        yield fake_quant


def enable_observer(module: nn.Module) -> int:
    """Turn every observer in ``module`` on; returns how many fake quants."""
    return _apply(module, lambda fq: fq.enable_observer())


def disable_observer(module: nn.Module) -> int:
    """Turn every observer in ``module`` off; returns how many fake quants."""
    return _apply(module, lambda fq: fq.disable_observer())


def enable_fake_quant(module: nn.Module) -> int:
    """Turn fake quantization on everywhere in ``module``; returns how many
    fake quants."""
    return _apply(module, lambda fq: fq.enable_fake_quant())


def disable_fake_quant(module: nn.Module) -> int:
    """Turn fake quantization off everywhere in ``module`` (a float model
    again); returns how many fake quants."""
    return _apply(module, lambda fq: fq.disable_fake_quant())


def _apply(module: nn.Module, fn) -> int:
    count = 0
    for fake_quant in iter_fake_quants(module):
        fn(fake_quant)
        count += 1
    return count


def check_calibrated(module: nn.Module) -> None:
    """Check that every fake quant in ``module`` has qparams.

    Raises:
        RuntimeError: Listing the qualified names of the fake quants that
            were never calibrated.
    """
    missing = [
        name or fq.name for name, fq in named_fake_quants(module)
        if not fq.is_initialized
    ]
    if missing:
        raise RuntimeError(
            f'{len(missing)} fake quant(s) were never calibrated: '
            f'{missing}. Run calibration with observers enabled over data '
            'that reaches them, or load a calibrated checkpoint')
