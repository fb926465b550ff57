"""MMRazor names that are torch.ao objects: each raises a clear error.

mmrazor_quant does not use ``torch.ao.quantization`` (principle 1 of
docs/architecture.md), so the parts of MMRazor's API that register, build
or return torch.ao objects are not supported. Each stand-in here raises
:class:`TorchAONotSupportedError` naming what to use instead.
"""
from typing import Any, Callable, NoReturn

__all__ = [
    'TorchAONotSupportedError', 'raise_torch_ao', 'not_supported',
    'NotSupportedMapping', 'is_torch_ao_object'
]


class TorchAONotSupportedError(NotImplementedError):
    """An MMRazor name that is not supported (most are bound to torch.ao)
    was used; the message says why and what to use instead."""


_TORCH_AO = 'it is bound to torch.ao, which mmrazor_quant does not use'


def raise_torch_ao(name: str, instead: str, reason: str = _TORCH_AO
                   ) -> NoReturn:
    """Raise :class:`TorchAONotSupportedError` for ``name``.

    Args:
        name (str): The MMRazor name, e.g. ``'register_torch_observers'``.
        instead (str): What to use in mmrazor_quant.
        reason (str): Why it is not supported. Defaults to torch.ao.
    """
    raise TorchAONotSupportedError(
        f'{name} is not supported: {reason}. Use {instead} instead '
        '(see docs/mmrazor_compat.md)')


def not_supported(name: str, instead: str,
                  reason: str = _TORCH_AO) -> Callable[..., NoReturn]:
    """A function named ``name`` that raises when called."""

    def stand_in(*args: Any, **kwargs: Any) -> NoReturn:
        raise_torch_ao(name, instead, reason)

    stand_in.__name__ = name
    stand_in.__qualname__ = name
    stand_in.__doc__ = (f'Not supported ({reason}): raises '
                        f'TorchAONotSupportedError. Use {instead}.')
    return stand_in


class NotSupportedMapping:
    """A stand-in for an MMRazor table of torch.ao objects (e.g.
    ``BackendConfigs``): any lookup raises.

    Args:
        name (str): The MMRazor name.
        instead (str): What to use in mmrazor_quant.
    """

    def __init__(self, name: str, instead: str) -> None:
        self._name = name
        self._instead = instead

    def __getitem__(self, key: Any) -> NoReturn:
        raise_torch_ao(f'{self._name}[{key!r}]', self._instead)

    def get(self, key: Any, default: Any = None) -> NoReturn:
        raise_torch_ao(f'{self._name}.get({key!r})', self._instead)

    def __repr__(self) -> str:
        return f'<{self._name}: not supported (torch.ao)>'


def is_torch_ao_object(obj: Any) -> bool:
    """Whether ``obj`` (a class, function or instance) comes from
    ``torch.ao`` / ``torch.quantization`` / ``torch.nn.quantized``."""
    cls = obj if isinstance(obj, type) else type(obj)
    module = getattr(obj, '__module__', None) or cls.__module__ or ''
    return module.startswith(('torch.ao.', 'torch.quantization',
                              'torch.nn.quantized', 'torch.nn.intrinsic',
                              'torch.nn.qat'))
