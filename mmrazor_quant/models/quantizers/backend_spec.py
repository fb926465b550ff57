"""What a backend executes: the scheme declaration of a quantizer class.

A backend (a device, a runtime) fixes *how* tensors are quantized: signed or
not, symmetric or not, per-channel or not, which integer range, how ties are
rounded. The *precision* (which bit width a model uses) is a config choice
among the widths the backend supports. :class:`BackendSpec` declares the
former; the ``bit`` of the ``global_qconfig`` picks the latter:

.. code-block:: python

    class ToyNPUQuantizer(BaseQuantizer):
        backend = 'toy_npu'
        rules = QuantRules(quantized_inputs={OpKind.CONV: 'first'})
        scheme = BackendSpec(
            supported_bits=(4, 8),
            weight=TensorSpec(qdtypes=('qint8', ), symmetric=True,
                              symmetric_range=True, per_channel=True),
            activation=TensorSpec(qdtypes=('qint8', ), symmetric=True,
                                  symmetric_range=True, per_channel=False),
            rounding='half_away_from_zero')

The quantizer checks every qconfig (global and per layer) against it when it
is built, and fills in the backend's rounding where a qscheme leaves it out.
"""
from dataclasses import dataclass, field
from typing import Any, Dict, Iterable, Mapping, Optional, Tuple, Union

from mmrazor_quant.structures.quantization import QSchema, RoundingPolicy
from mmrazor_quant.structures.quantization.qscheme import MAX_BIT, MIN_BIT

__all__ = ['TensorSpec', 'BackendSpec', 'UP_TO_8_BITS']

_QDTYPES = ('qint8', 'quint8')
#: Every bit width an int8 kernel can run (a narrower grid inside int8).
UP_TO_8_BITS = tuple(range(MIN_BIT, 9))
_OPTIONAL_BOOLS = ('symmetric', 'symmetric_range', 'per_channel', 'pot_scale')


def _check_bits(bits: Any, where: str) -> Tuple[int, ...]:
    if isinstance(bits, int) or not bits:
        raise ValueError(f'{where} must be a non-empty tuple of ints, got '
                         f'{bits!r}')
    bits = tuple(bits)
    for bit in bits:
        if isinstance(bit, bool) or not isinstance(bit, int) or \
                not MIN_BIT <= bit <= MAX_BIT:
            raise ValueError(f'{where} must hold ints in [{MIN_BIT}, '
                             f'{MAX_BIT}], got {bits!r}')
    return bits


@dataclass(frozen=True)
class TensorSpec:
    """What a backend executes for one kind of tensor (weights or
    activations). ``None`` means "either is fine".

    Args:
        bits (tuple[int], optional): Bit widths for this tensor kind, a
            subset of :attr:`BackendSpec.supported_bits`. Defaults to None
            (all of them).
        qdtypes (tuple[str]): Allowed ``qdtype`` values (signedness).
            Defaults to ``('qint8', 'quint8')``.
        symmetric (bool, optional): Required ``is_symmetry``.
            Defaults to None.
        symmetric_range (bool, optional): Required ``is_symmetric_range``.
            Defaults to None.
        per_channel (bool, optional): Required per-channel (True) or
            per-tensor (False) quantization. Defaults to None.
        pot_scale (bool, optional): Required ``is_pot_scale``.
            Defaults to None.
        quant_ranges (Mapping[int, tuple[int, int]], optional): For a bit
            width, the exact ``(quant_min, quant_max)`` the device takes,
            e.g. ``{8: (-127, 127)}``. Defaults to None (any range).

    Raises:
        ValueError, TypeError: If a field is malformed.
    """
    bits: Optional[Tuple[int, ...]] = None
    qdtypes: Tuple[str, ...] = _QDTYPES
    symmetric: Optional[bool] = None
    symmetric_range: Optional[bool] = None
    per_channel: Optional[bool] = None
    pot_scale: Optional[bool] = None
    quant_ranges: Optional[Mapping[int, Tuple[int, int]]] = None

    def __post_init__(self) -> None:
        if self.bits is not None:
            object.__setattr__(self, 'bits',
                               _check_bits(self.bits, 'TensorSpec.bits'))
        qdtypes = (self.qdtypes, ) if isinstance(self.qdtypes,
                                                 str) else tuple(self.qdtypes)
        if not qdtypes or any(q not in _QDTYPES for q in qdtypes):
            raise ValueError(f'TensorSpec.qdtypes must be a non-empty subset '
                             f'of {_QDTYPES}, got {self.qdtypes!r}')
        object.__setattr__(self, 'qdtypes', qdtypes)
        for name in _OPTIONAL_BOOLS:
            if getattr(self, name) not in (None, True, False):
                raise TypeError(f'TensorSpec.{name} must be True, False or '
                                f'None, got {getattr(self, name)!r}')
        if self.quant_ranges is not None:
            ranges = {}
            for bit, rng in dict(self.quant_ranges).items():
                if not (isinstance(rng, (tuple, list)) and len(rng) == 2
                        and rng[0] < rng[1]):
                    raise ValueError('TensorSpec.quant_ranges values must be '
                                     f'(quant_min, quant_max) with quant_min '
                                     f'< quant_max, got {bit}: {rng!r}')
                ranges[bit] = (int(rng[0]), int(rng[1]))
            object.__setattr__(self, 'quant_ranges', ranges)

    def violations(self, qscheme: QSchema,
                   backend_bits: Tuple[int, ...]) -> Dict[str, str]:
        """What in ``qscheme`` this spec rejects: ``{qscheme key: what it
        must be}`` (empty if it is accepted)."""
        bad = {}
        bits = self.bits or backend_bits
        if qscheme.bit not in bits:
            bad['bit'] = f'one of {bits}'
        if qscheme.qdtype not in self.qdtypes:
            bad['qdtype'] = f'one of {self.qdtypes}'
        fields = dict(symmetric=('is_symmetry', qscheme.is_symmetry),
                      symmetric_range=('is_symmetric_range',
                                       qscheme.is_symmetric_range),
                      per_channel=('is_per_channel',
                                   bool(qscheme.is_per_channel)),
                      pot_scale=('is_pot_scale', qscheme.is_pot_scale))
        for name, (key, value) in fields.items():
            wanted = getattr(self, name)
            if wanted is not None and value != wanted:
                bad[key] = str(wanted)
        if self.quant_ranges and qscheme.bit in self.quant_ranges and \
                qscheme.quant_range != self.quant_ranges[qscheme.bit]:
            bad['quant_range'] = (f'{self.quant_ranges[qscheme.bit]} at '
                                  f'bit={qscheme.bit} (got '
                                  f'{qscheme.quant_range})')
        return bad

    def describe(self, backend_bits: Tuple[int, ...]) -> str:
        """A short human-readable summary, e.g. ``'qint8 sym per-channel
        bits (4, 8)'``."""
        parts = ['/'.join(self.qdtypes)]
        if self.symmetric is not None:
            parts.append('sym' if self.symmetric else 'asym')
        if self.per_channel is not None:
            parts.append('per-channel' if self.per_channel else 'per-tensor')
        if self.pot_scale:
            parts.append('pot-scale')
        parts.append(f'bits {self.bits or backend_bits}')
        return ' '.join(parts)


@dataclass(frozen=True)
class BackendSpec:
    """The quantization schemes a backend executes.

    Args:
        supported_bits (tuple[int]): Bit widths the backend runs; a config
            chooses among them (one backend, several precisions).
            Defaults to ``(8, )``.
        weight (TensorSpec): Constraints on weight schemes.
            Defaults to ``TensorSpec()`` (anything).
        activation (TensorSpec): Constraints on activation schemes.
            Defaults to ``TensorSpec()`` (anything).
        rounding (str | RoundingPolicy): How the device rounds ties. A
            qscheme without ``rounding`` gets it; one with another rounding
            is an error. Defaults to ``'half_even'``.

    Raises:
        ValueError: If ``supported_bits`` is empty or out of [2, 16], a
            tensor spec allows bits the backend does not support, or
            ``rounding`` is unknown.
        TypeError: If ``weight``/``activation`` is not a :class:`TensorSpec`.
    """
    supported_bits: Tuple[int, ...] = (8, )
    weight: TensorSpec = field(default_factory=TensorSpec)
    activation: TensorSpec = field(default_factory=TensorSpec)
    rounding: Union[str, RoundingPolicy] = RoundingPolicy.HALF_EVEN

    def __post_init__(self) -> None:
        bits = _check_bits(self.supported_bits, 'BackendSpec.supported_bits')
        object.__setattr__(self, 'supported_bits', bits)
        for name in ('weight', 'activation'):
            spec = getattr(self, name)
            if not isinstance(spec, TensorSpec):
                raise TypeError(f'BackendSpec.{name} must be a TensorSpec, '
                                f'got {spec!r}')
            extra = set(spec.bits or ()) - set(bits)
            if extra:
                raise ValueError(f'BackendSpec.{name}.bits {spec.bits} '
                                 f'includes {sorted(extra)}, not in '
                                 f'supported_bits {bits}')
        try:
            object.__setattr__(self, 'rounding', RoundingPolicy(self.rounding))
        except ValueError:
            allowed = [p.value for p in RoundingPolicy]
            raise ValueError(f'BackendSpec.rounding must be one of {allowed}, '
                             f'got {self.rounding!r}') from None

    def with_defaults(self, qconfig: Dict[str, Any]) -> Dict[str, Any]:
        """A copy of a ``global_qconfig`` dict whose qschemes carry this
        backend's rounding where they do not set one."""
        out = dict(qconfig)
        for key in ('w_qscheme', 'a_qscheme'):
            if isinstance(out.get(key), dict):
                out[key] = {'rounding': self.rounding.value, **out[key]}
        return out

    def check(self, w_qscheme: QSchema, a_qscheme: QSchema,
              owner: str) -> None:
        """Raise ValueError naming every qscheme key the backend rejects.

        Args:
            w_qscheme (QSchema): The weight scheme.
            a_qscheme (QSchema): The activation scheme.
            owner (str): The quantizer's name, for the message.
        """
        problems = []
        for prefix, spec, qs in (('w', self.weight, w_qscheme),
                                 ('a', self.activation, a_qscheme)):
            bad = spec.violations(qs, self.supported_bits)
            if qs.rounding is not self.rounding:
                bad['rounding'] = repr(self.rounding.value)
            for key, wanted in bad.items():
                got = qs.to_dict().get(key, getattr(qs, key, None))
                if isinstance(got, RoundingPolicy):
                    got = got.value
                problems.append(f'global_qconfig.{prefix}_qscheme.{key} must '
                                f'be {wanted}, got {got!r}')
        if problems:
            raise ValueError(f'{owner} cannot execute this qconfig:\n  ' +
                             '\n  '.join(problems))

    def check_fake_quants(self, fake_quants: Iterable[Tuple[str, bool,
                                                           QSchema]],
                          owner: str) -> None:
        """Raise ValueError naming every fake quant of a model whose scheme
        the backend does not execute (what an exporter checks before it
        writes anything).

        Args:
            fake_quants (Iterable[tuple]): ``(name, is_weight, qscheme)``
                of each fake quant.
            owner (str): The backend's name, for the message.
        """
        problems = []
        for name, is_weight, qs in fake_quants:
            spec = self.weight if is_weight else self.activation
            bad = spec.violations(qs, self.supported_bits)
            if qs.rounding is not self.rounding:
                bad['rounding'] = repr(self.rounding.value)
            prefix = 'w' if is_weight else 'a'
            for key, wanted in bad.items():
                got = qs.to_dict().get(key, getattr(qs, key, None))
                if isinstance(got, RoundingPolicy):
                    got = got.value
                problems.append(f'{name}: {prefix}_qscheme.{key} must be '
                                f'{wanted}, got {got!r}')
        if problems:
            raise ValueError(
                f'{owner} does not execute the scheme of {len(problems)} '
                f'fake quant setting(s) ({self.describe()}); quantize with '
                f"the backend's quantizer:\n  " + '\n  '.join(problems))

    def describe(self) -> str:
        """One line: weights, activations, rounding."""
        return (f'weights {self.weight.describe(self.supported_bits)}; '
                f'activations {self.activation.describe(self.supported_bits)}'
                f'; rounding {self.rounding.value}')
