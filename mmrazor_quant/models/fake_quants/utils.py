"""Switches over every fake quant in a module tree (used by the loops), and
a snapshot that puts them back."""
import contextlib
from typing import Iterator, List, Tuple

from torch import nn

from .base import BaseFakeQuantize

__all__ = [
    'named_fake_quants', 'iter_fake_quants', 'enable_observer',
    'disable_observer', 'enable_fake_quant', 'disable_fake_quant',
    'check_calibrated', 'save_switches', 'restore_switches',
    'preserve_quant_state'
]

#: ``(fake quant, observer on, fake quant on)`` per fake quant.
Switches = List[Tuple[BaseFakeQuantize, bool, bool]]


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


def save_switches(module: nn.Module) -> Switches:
    """The observer and fake-quant flags of every fake quant in ``module``,
    for :func:`restore_switches`."""
    return [(fq, bool(fq.observer_enabled[0]), bool(fq.fake_quant_enabled[0]))
            for fq in iter_fake_quants(module)]


def restore_switches(switches: Switches) -> None:
    """Set each fake quant's flags back to what :func:`save_switches`
    recorded."""
    for fake_quant, observer_on, fake_quant_on in switches:
        fake_quant.enable_observer(observer_on)
        fake_quant.enable_fake_quant(fake_quant_on)


@contextlib.contextmanager
def preserve_quant_state(module: nn.Module) -> Iterator[nn.Module]:
    """Restore on exit what calibration, evaluation and PTQ passes switch.

    On leaving the ``with`` block (also through an exception) every fake
    quant gets its observer / fake-quant flags back, every parameter its
    ``requires_grad`` and every submodule its train/eval flag. The flags are
    restored per submodule: a GraphModule's own flag says nothing about the
    leaves it shares with an ``MMArchitectureQuant`` in another mode.

    Example:
        >>> with preserve_quant_state(model):
        ...     disable_observer(model)
        ...     model.eval()
        ...     evaluate(model)

    Args:
        module (nn.Module): The model.

    Yields:
        nn.Module: ``module``.
    """
    switches = save_switches(module)
    training = [(m, m.training) for m in module.modules()]
    grads = [(p, p.requires_grad) for p in module.parameters()]
    try:
        yield module
    finally:
        restore_switches(switches)
        for param, requires_grad in grads:
            param.requires_grad_(requires_grad)
        for submodule, was_training in training:
            submodule.training = was_training
