"""The quantization scheme of one tensor: dtype, bits, symmetry, granularity.

``QSchema`` accepts MMRazor's qscheme keys (``qdtype``, ``bit``,
``is_symmetry``, ``is_symmetric_range``, ``is_per_channel``,
``is_pot_scale``) and adds ``ch_axis`` and ``rounding``. Keys it does not know
are kept in ``observer_kwargs`` and passed to the observer, as in MMRazor
(e.g. ``averaging_constant=0.1`` for a moving-average observer).
"""
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Dict, Union

__all__ = ['QSchema', 'PerTensor', 'PerChannel', 'RoundingPolicy']

_QDTYPES = ('quint8', 'qint8')
MIN_BIT, MAX_BIT = 2, 16


class RoundingPolicy(str, Enum):
    """How a value exactly half-way between two grid points is rounded.

    ``HALF_EVEN`` (banker's rounding) is what ONNX ``QuantizeLinear``,
    OpenVINO, TensorRT and torch's fake-quant kernels do.
    ``HALF_AWAY_FROM_ZERO`` (``sign(x) * floor(|x| + 0.5)``) is what some
    DSP/NPU backends do.
    """
    HALF_EVEN = 'half_even'
    HALF_AWAY_FROM_ZERO = 'half_away_from_zero'


@dataclass(frozen=True)
class PerTensor:
    """One scale and zero-point for the whole tensor."""


@dataclass(frozen=True)
class PerChannel:
    """One scale and zero-point per slice along ``axis``.

    Args:
        axis (int): The channel axis. Defaults to 0 (output channels of a
            conv/linear weight).
    """
    axis: int = 0


Granularity = Union[PerTensor, PerChannel]


@dataclass(frozen=True)
class QSchema:
    """Quantization scheme of a tensor.

    The integer range is ``[quant_min, quant_max]``:

    ============  =====================  ==========================
    qdtype        full range             ``is_symmetric_range=True``
    ============  =====================  ==========================
    ``qint8``     ``[-2^(b-1), 2^(b-1)-1]``  ``[-(2^(b-1)-1), 2^(b-1)-1]``
    ``quint8``    ``[0, 2^b - 1]``       ``[0, 2^b - 2]``
    ============  =====================  ==========================

    ``qint8``/``quint8`` name the signedness; the width is ``bit`` (2..16).

    Args:
        qdtype (str): ``'quint8'`` (unsigned) or ``'qint8'`` (signed).
            Defaults to ``'quint8'``.
        bit (int): Bit width, 2..16. Defaults to 8.
        is_symmetry (bool): Symmetric quantization (zero-point fixed at the
            middle of the range, or at 0 for unsigned non-negative data).
            Defaults to False.
        is_symmetric_range (bool): Drop the most negative integer so the
            range is symmetric around 0 (TensorRT, OpenVINO weights).
            Defaults to False.
        is_per_channel (bool, optional): Per-channel scales along
            ``ch_axis``. ``None`` means "decided by the observer class".
            Defaults to None.
        ch_axis (int): Channel axis for per-channel schemes. Defaults to 0.
        is_pot_scale (bool): Round scales up to a power of two.
            Defaults to False.
        rounding (str | RoundingPolicy): Rounding policy. Defaults to
            ``'half_even'``.
        observer_kwargs (dict): Extra keys, passed to the observer.

    Raises:
        ValueError: If ``qdtype``, ``bit``, ``ch_axis`` or ``rounding`` is
            out of its allowed values.
        TypeError: If a boolean field receives a non-boolean.

    Example:
        >>> QSchema.from_dict(dict(qdtype='qint8', bit=4, is_symmetry=True,
        ...                        is_symmetric_range=True)).quant_range
        (-7, 7)
    """
    qdtype: str = 'quint8'
    bit: int = 8
    is_symmetry: bool = False
    is_symmetric_range: bool = False
    is_per_channel: Union[bool, None] = None
    ch_axis: int = 0
    is_pot_scale: bool = False
    rounding: RoundingPolicy = RoundingPolicy.HALF_EVEN
    observer_kwargs: Dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.qdtype not in _QDTYPES:
            raise ValueError(f'qscheme.qdtype must be one of {_QDTYPES}, '
                             f'got {self.qdtype!r}')
        if isinstance(self.bit, bool) or not isinstance(self.bit, int) or \
                not MIN_BIT <= self.bit <= MAX_BIT:
            raise ValueError(f'qscheme.bit must be an int in '
                             f'[{MIN_BIT}, {MAX_BIT}], got {self.bit!r}')
        for name in ('is_symmetry', 'is_symmetric_range', 'is_pot_scale'):
            if not isinstance(getattr(self, name), bool):
                raise TypeError(f'qscheme.{name} must be a bool, got '
                                f'{getattr(self, name)!r}')
        if self.is_per_channel not in (None, True, False):
            raise TypeError('qscheme.is_per_channel must be a bool or None, '
                            f'got {self.is_per_channel!r}')
        if isinstance(self.ch_axis, bool) or not isinstance(self.ch_axis, int):
            raise ValueError(f'qscheme.ch_axis must be an int, got '
                             f'{self.ch_axis!r}')
        try:
            object.__setattr__(self, 'rounding', RoundingPolicy(self.rounding))
        except ValueError:
            allowed = [p.value for p in RoundingPolicy]
            raise ValueError(f'qscheme.rounding must be one of {allowed}, '
                             f'got {self.rounding!r}') from None

    @classmethod
    def from_dict(cls, cfg: Union[Dict[str, Any], 'QSchema']) -> 'QSchema':
        """Build from an MMRazor-style dict; unknown keys go to the observer.

        Args:
            cfg (dict | QSchema): The qscheme config, or a ready QSchema.

        Returns:
            QSchema: The validated scheme.
        """
        if isinstance(cfg, QSchema):
            return cfg
        if not isinstance(cfg, dict):
            raise TypeError(f'a qscheme must be a dict, got {type(cfg)}')
        known = set(cls.__dataclass_fields__) - {'observer_kwargs'}
        own = {k: v for k, v in cfg.items() if k in known}
        extra = {k: v for k, v in cfg.items() if k not in known}
        extra.update(cfg.get('observer_kwargs', {}))
        return cls(**own, observer_kwargs=extra)

    def replace(self, **changes: Any) -> 'QSchema':
        """Return a copy with ``changes`` applied (the original is frozen)."""
        fields = {k: getattr(self, k) for k in self.__dataclass_fields__}
        fields['observer_kwargs'] = dict(self.observer_kwargs)
        fields.update(changes)
        return QSchema(**fields)

    @property
    def is_signed(self) -> bool:
        return self.qdtype == 'qint8'

    @property
    def quant_min(self) -> int:
        if self.is_signed:
            low = -2**(self.bit - 1)
            return low + 1 if self.is_symmetric_range else low
        return 0

    @property
    def quant_max(self) -> int:
        if self.is_signed:
            return 2**(self.bit - 1) - 1
        high = 2**self.bit - 1
        return high - 1 if self.is_symmetric_range else high

    @property
    def quant_range(self) -> tuple:
        return self.quant_min, self.quant_max

    @property
    def granularity(self) -> Granularity:
        """``PerChannel(ch_axis)`` if per-channel, else ``PerTensor()``."""
        return PerChannel(self.ch_axis) if self.is_per_channel else PerTensor()

    def to_dict(self) -> Dict[str, Any]:
        """Plain-dict form (for logs and side files)."""
        out = {k: getattr(self, k) for k in self.__dataclass_fields__}
        out['rounding'] = self.rounding.value
        out['quant_min'], out['quant_max'] = self.quant_range
        return out
