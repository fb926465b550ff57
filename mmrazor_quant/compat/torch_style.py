"""torch-style observer kwargs and ``with_args`` factories, as MMRazor's
code and tests write them, mapped onto :class:`QSchema`.

MMRazor's observers and fake quants are torch.ao classes configured with
``dtype=torch.quint8, qscheme=torch.per_tensor_affine, quant_min=0,
quant_max=255, reduce_range=False, ch_axis=0`` and built through
``Cls.with_args(...)()``. Here those keys become one :class:`QSchema` that
the observer and the fake quant share:

=====================  =====================================================
torch-style key        QSchema
=====================  =====================================================
``dtype``              ``qdtype`` (``torch.quint8``/``torch.uint8`` ->
                       ``'quint8'``, ``torch.qint8``/``torch.int8`` ->
                       ``'qint8'``)
``qscheme``            ``is_symmetry`` and ``is_per_channel`` (must agree
                       with the observer class)
``quant_min/max``      ``bit`` and ``is_symmetric_range`` (the range must be
                       one of those two forms for some bit width 2..16)
``reduce_range``       halves the range as torch does, for the observer and
                       the fake quant alike (one log line says so)
``ch_axis``            ``ch_axis``
=====================  =====================================================

Other keys go to the class's own constructor (e.g. ``averaging_constant``).
"""
import inspect
from typing import Any, Dict, Optional, Tuple

import torch

from mmrazor_quant.structures.quantization.qscheme import (
    MAX_BIT,
    MIN_BIT,
    QSchema,
)
from .torch_ao import is_torch_ao_object, raise_torch_ao

__all__ = [
    'TORCH_STYLE_KEYS', 'split_torch_kwargs', 'resolve_qscheme',
    'TorchStyleFactory', 'WithArgsMixin'
]

#: The torch.ao observer keys that map onto a QSchema.
TORCH_STYLE_KEYS = ('dtype', 'qscheme', 'quant_min', 'quant_max',
                    'reduce_range', 'ch_axis', 'eps', 'is_dynamic',
                    'factory_kwargs')

_DTYPES = {
    torch.quint8: 'quint8',
    torch.uint8: 'quint8',
    torch.qint8: 'qint8',
    torch.int8: 'qint8',
    'quint8': 'quint8',
    'qint8': 'qint8',
}
# torch qscheme -> (is_symmetry, is_per_channel)
_QSCHEMES = {
    torch.per_tensor_affine: (False, False),
    torch.per_tensor_symmetric: (True, False),
    torch.per_channel_affine: (False, True),
    torch.per_channel_symmetric: (True, True),
}
_EPS = torch.finfo(torch.float32).eps


def _qdtype(dtype: Any, owner: str) -> str:
    if dtype is None:
        return 'quint8'
    try:
        return _DTYPES[dtype]
    except (KeyError, TypeError):
        raise ValueError(f'{owner}: dtype must be torch.quint8 or torch.qint8 '
                         f'(or torch.uint8 / torch.int8), got {dtype!r}') \
            from None


def _default_range(qdtype: str, reduce_range: bool) -> Tuple[int, int]:
    """torch's 8-bit default range, halved by ``reduce_range``."""
    if qdtype == 'qint8':
        return (-64, 63) if reduce_range else (-128, 127)
    return (0, 127) if reduce_range else (0, 255)


def _bits_of_range(qdtype: str, quant_min: int, quant_max: int,
                   owner: str) -> Tuple[int, bool]:
    """``(bit, is_symmetric_range)`` whose range is exactly the given one."""
    for bit in range(MIN_BIT, MAX_BIT + 1):
        for symmetric_range in (False, True):
            qs = QSchema(qdtype, bit, is_symmetric_range=symmetric_range)
            if qs.quant_range == (quant_min, quant_max):
                return bit, symmetric_range
    example = QSchema(qdtype, 8).quant_range
    raise ValueError(
        f'{owner}: quant_min={quant_min}, quant_max={quant_max} is not a '
        f'{qdtype} range of 2..16 bits; use a full range (e.g. {example}) or '
        'its symmetric form without the most negative value (e.g. '
        f'{QSchema(qdtype, 8, is_symmetric_range=True).quant_range})')


def _check_constants(kwargs: Dict[str, Any], owner: str) -> None:
    eps = kwargs.get('eps')
    if eps is not None and float(eps) != _EPS:
        raise ValueError(f'{owner}: eps={eps!r} is not supported; scales are '
                         f'clamped at float32 eps ({_EPS})')
    if kwargs.get('is_dynamic'):
        raise ValueError(f'{owner}: is_dynamic=True (dynamic quantization) '
                         'is not supported; observers are static')
    if kwargs.get('factory_kwargs'):
        raise ValueError(f'{owner}: factory_kwargs is not supported; move '
                         'the module with .to(device) instead')


def split_torch_kwargs(owner: str, per_channel: Optional[bool],
                       kwargs: Dict[str, Any]
                       ) -> Tuple[Optional[QSchema], Dict[str, Any]]:
    """Turn the torch-style keys of ``kwargs`` into a :class:`QSchema`.

    Args:
        owner (str): Class name, for messages.
        per_channel (bool, optional): Whether the observer is per-channel;
            None accepts either.
        kwargs (dict): Constructor kwargs; not modified.

    Returns:
        tuple: The scheme (None if no torch-style key was given) and the
        remaining kwargs.

    Raises:
        ValueError: If a value has no QSchema equivalent or contradicts the
            observer class.
    """
    given = {k: v for k, v in kwargs.items() if k in TORCH_STYLE_KEYS}
    if not isinstance(given.get('qscheme', torch.per_tensor_affine),
                      torch.qscheme):
        given.pop('qscheme')  # our own QSchema / dict
    rest = {k: v for k, v in kwargs.items() if k not in given}
    if not given:
        return None, rest
    _check_constants(given, owner)
    qdtype = _qdtype(given.get('dtype'), owner)
    torch_qscheme = given.get('qscheme')
    if torch_qscheme is None:
        is_symmetry, is_per_channel = False, per_channel
    elif torch_qscheme in _QSCHEMES:
        is_symmetry, is_per_channel = _QSCHEMES[torch_qscheme]
    else:
        raise ValueError(f'{owner}: qscheme must be one of '
                         f'{list(_QSCHEMES)}, got {torch_qscheme!r}')
    if per_channel is not None and is_per_channel != per_channel:
        kind = 'per-channel' if per_channel else 'per-tensor'
        raise ValueError(f'{owner} is a {kind} observer but qscheme='
                         f'{torch_qscheme} says otherwise; use the '
                         f'{"PerChannel" if is_per_channel else "per-tensor"} '
                         'variant of the observer')
    reduce_range = bool(given.get('reduce_range', False))
    quant_min, quant_max = given.get('quant_min'), given.get('quant_max')
    if (quant_min is None) != (quant_max is None):
        raise ValueError(f'{owner}: give both quant_min and quant_max or '
                         f'neither, got {quant_min!r}, {quant_max!r}')
    if quant_min is None:
        quant_min, quant_max = _default_range(qdtype, reduce_range)
    elif reduce_range:
        quant_min, quant_max = quant_min // 2, quant_max // 2
    if reduce_range:
        from mmengine.logging import print_log
        print_log(
            f'{owner}: reduce_range=True quantizes to [{quant_min}, '
            f'{quant_max}] in the observer and the fake quant alike '
            '(MMRazor reduced only the observer\'s range)',
            logger='current')
    bit, symmetric_range = _bits_of_range(qdtype, int(quant_min),
                                          int(quant_max), owner)
    qscheme = QSchema(
        qdtype=qdtype,
        bit=bit,
        is_symmetry=is_symmetry,
        is_symmetric_range=symmetric_range,
        is_per_channel=is_per_channel,
        ch_axis=int(given.get('ch_axis', 0)))
    return qscheme, rest


def resolve_qscheme(cls: type, qscheme: Any, kwargs: Dict[str, Any]) -> Any:
    """The ``qscheme`` argument of an observer built with torch-style kwargs
    (``qscheme`` may then be a ``torch.qscheme``).

    Raises:
        TypeError: If a key is neither torch-style nor the observer's.
        ValueError: See :func:`split_torch_kwargs`.
    """
    if isinstance(qscheme, torch.qscheme):
        kwargs = dict(kwargs, qscheme=qscheme)
        qscheme = None
    elif not kwargs:
        return qscheme
    per_channel = getattr(cls, 'per_channel', None)
    mapped, rest = split_torch_kwargs(cls.__name__, per_channel, kwargs)
    if rest:
        raise TypeError(f'{cls.__name__}() got unexpected keyword arguments '
                        f'{sorted(rest)}')
    if qscheme is not None and mapped is not None:
        raise TypeError(f'{cls.__name__}: give either a QSchema or '
                        f'torch-style keys {list(TORCH_STYLE_KEYS)}, not '
                        'both')
    return mapped if mapped is not None else qscheme


def _resolve_observer(observer: Any, owner: str) -> Tuple[type, Dict]:
    """(observer class, its factory kwargs) of a class or a factory."""
    if isinstance(observer, TorchStyleFactory):
        return observer.cls, dict(observer.kwargs)
    if isinstance(observer, type):
        if is_torch_ao_object(observer):
            from mmrazor_quant.registry import MODELS
            MODELS.import_from_location()
            ours = MODELS.get(observer.__name__)
            instead = (f'mmrazor_quant.models.observers.{observer.__name__}'
                       if getattr(ours, 'quant_role', None) == 'observer' else
                       'an observer of mmrazor_quant.models.observers')
            raise_torch_ao(f'{owner}(observer={observer.__module__}.'
                           f'{observer.__name__})', instead)
        if getattr(observer, 'quant_role', None) == 'observer':
            return observer, {}
    raise TypeError(f'{owner}: observer must be an observer class, its '
                    f'with_args(...) factory, a config dict or a module, got '
                    f'{observer!r}')


def _build_observer(cls: type, kwargs: Dict[str, Any]) -> torch.nn.Module:
    qscheme, rest = split_torch_kwargs(cls.__name__,
                                       getattr(cls, 'per_channel', None),
                                       kwargs)
    if qscheme is not None:
        rest['qscheme'] = qscheme
    return cls(**rest)


def _own_params(cls: type) -> set:
    params = set()
    for klass in cls.__mro__:
        init = klass.__dict__.get('__init__')
        if init is not None:
            params |= set(inspect.signature(init).parameters)
    return params - {'self', 'args', 'kwargs'}


def _build_fake_quant(cls: type, kwargs: Dict[str, Any]) -> torch.nn.Module:
    kwargs = dict(kwargs)
    observer = kwargs.pop('observer', None)
    if observer is None or isinstance(observer, (dict, torch.nn.Module)):
        qscheme, rest = split_torch_kwargs(cls.__name__, None, kwargs)
        if qscheme is not None:
            rest['qscheme'] = qscheme
        return cls(observer=observer, **rest)
    for key, default in (('scale', 1.0), ('zero_point', 0.0)):
        if key in kwargs and float(kwargs.pop(key)) != default:
            raise ValueError(f'{cls.__name__}: an initial {key} is not '
                             'supported; qparams come from the observer on '
                             'the first batch (or from a checkpoint)')
    own = _own_params(cls) - {'observer', 'qscheme'}
    fq_kwargs = {k: v for k, v in kwargs.items() if k in own}
    obs_cls, obs_kwargs = _resolve_observer(observer, cls.__name__)
    obs_kwargs.update({k: v for k, v in kwargs.items() if k not in own})
    obs = _build_observer(obs_cls, obs_kwargs)
    return cls(observer=obs, qscheme=obs.qscheme, **fq_kwargs)


class TorchStyleFactory:
    """What ``Cls.with_args(**kwargs)`` returns: calling it builds ``Cls``
    (torch-style keys mapped onto a QSchema); ``with_args`` adds keys.

    Args:
        cls (type): An observer or fake-quant class of mmrazor_quant.
        kwargs (dict): The constructor keys given so far.
    """

    def __init__(self, cls: type, kwargs: Dict[str, Any]) -> None:
        self.cls = cls
        self.kwargs = dict(kwargs)

    def with_args(self, **kwargs: Any) -> 'TorchStyleFactory':
        """A factory with ``kwargs`` added (later keys win)."""
        return TorchStyleFactory(self.cls, {**self.kwargs, **kwargs})

    def __call__(self, **kwargs: Any) -> torch.nn.Module:
        merged = {**self.kwargs, **kwargs}
        if getattr(self.cls, 'quant_role', None) == 'fake_quant':
            return _build_fake_quant(self.cls, merged)
        return _build_observer(self.cls, merged)

    def __repr__(self) -> str:
        args = ', '.join(f'{k}={v!r}' for k, v in self.kwargs.items())
        return f'{self.cls.__name__}.with_args({args})'


class WithArgsMixin:
    """Adds MMRazor's (torch's) ``Cls.with_args(**kwargs)`` factory."""

    @classmethod
    def with_args(cls, **kwargs: Any) -> TorchStyleFactory:
        """A factory that builds ``cls`` with ``kwargs`` when called.

        Example:
            >>> fq = LearnableFakeQuantize.with_args(
            ...     observer=LSQObserver, dtype=torch.quint8,
            ...     qscheme=torch.per_tensor_affine, quant_min=0,
            ...     quant_max=255)()
            >>> fq.qscheme.quant_range
            (0, 255)
        """
        return TorchStyleFactory(cls, kwargs)
