"""Per-layer qconfigs: by module name (glob or regex) and by op type."""
import copy
import fnmatch
import re
from typing import (
    Any,
    Dict,
    Iterable,
    Iterator,
    List,
    Optional,
    Sequence,
    Tuple,
    Union,
)

from torch import nn

from mmrazor_quant.structures.quantization import QConfigHandler
from mmrazor_quant.structures.quantization.qconfig import REQUIRED_KEYS

__all__ = ['QConfigMapping']

Pairs = Union[Dict[Any, Any], Sequence[Tuple[Any, Any]]]


def _pairs(rules: Optional[Pairs], key: str) -> List[Tuple[Any, Any]]:
    if rules is None:
        return []
    items = rules.items() if isinstance(rules, dict) else rules
    pairs = []
    for item in items:
        if not (isinstance(item, (tuple, list)) and len(item) == 2):
            raise TypeError(f'qconfig_mapping.{key} entries must be '
                            f'(name, qconfig) pairs, got {item!r}')
        pairs.append((item[0], item[1]))
    return pairs


def _merge(global_cfg: dict, override: dict, key: str) -> dict:
    """``override`` may be a whole qconfig or only the keys that change
    (e.g. ``dict(w_qscheme=dict(bit=8), a_qscheme=dict(bit=8))``)."""
    unknown = set(override) - set(REQUIRED_KEYS)
    if unknown:
        raise KeyError(f'qconfig_mapping.{key} has unknown keys '
                       f'{sorted(unknown)}; allowed: {list(REQUIRED_KEYS)}')
    merged = copy.deepcopy(global_cfg)
    for k, v in override.items():
        if k.endswith('_qscheme') and isinstance(v, dict):
            merged[k] = {**merged[k], **v}
        else:
            merged[k] = copy.deepcopy(v)
    return merged


class _NamePattern:
    """An exact name, a glob (``backbone.layer4.*``) or a regex (``re:``)."""

    def __init__(self, pattern: str) -> None:
        if not isinstance(pattern, str):
            raise TypeError('qconfig_mapping.module_name patterns must be '
                            f'str, got {pattern!r}')
        self.pattern = pattern
        self._regex = re.compile(pattern[3:]) if pattern.startswith(
            're:') else None

    def matches(self, name: str) -> bool:
        if self._regex is not None:
            return self._regex.fullmatch(name) is not None
        return name == self.pattern or fnmatch.fnmatchcase(name, self.pattern)


def _type_matches(type_: Union[str, type], module: nn.Module) -> bool:
    if isinstance(type_, type):
        return isinstance(module, type_)
    names = set()
    for cls in type(module).__mro__:
        names.update((cls.__name__, f'{cls.__module__}.{cls.__qualname__}'))
    return type_ in names


class QConfigMapping:
    """Which qconfig each layer gets: ``module_name`` rules (first match)
    win over ``object_type`` rules, which win over the global qconfig. A
    rule's qconfig is a whole qconfig, the keys that differ from the global
    one, or ``None`` to keep the layer float.

    Args:
        global_qconfig (QConfigHandler): The default.
        module_name (list | dict, optional): ``[(pattern, qconfig), ...]``;
            patterns are exact names, globs or ``'re:<regex>'``.
        object_type (list | dict, optional): ``[(type, qconfig), ...]``;
            types are classes, class names or dotted paths.
    """

    def __init__(self,
                 global_qconfig: QConfigHandler,
                 module_name: Optional[Pairs] = None,
                 object_type: Optional[Pairs] = None) -> None:
        self.global_qconfig = global_qconfig
        self.module_name = [(_NamePattern(p), self._handler(q, f'"{p}"'))
                            for p, q in _pairs(module_name, 'module_name')]
        self.object_type = [(t, self._handler(q, f'"{t}"'))
                            for t, q in _pairs(object_type, 'object_type')]

    def _handler(self, qconfig: Optional[dict],
                 key: str) -> Optional[QConfigHandler]:
        if qconfig is None:
            return None
        if isinstance(qconfig, QConfigHandler):
            return qconfig
        return QConfigHandler(_merge(self.global_qconfig.cfg, qconfig, key))

    def handlers(self) -> Iterator[QConfigHandler]:
        """Every qconfig in use (to check the backend can run them)."""
        yield self.global_qconfig
        for _, handler in self.module_name + self.object_type:
            if handler is not None:
                yield handler

    def lookup(self, name: Optional[str], module: Optional[nn.Module]
               ) -> Tuple[Optional[QConfigHandler], Optional[str]]:
        """The qconfig of a layer and the tag of the rule that chose it, or
        ``(None, None)`` when no rule matches (the caller's default)."""
        if name is not None:
            for pattern, handler in self.module_name:
                if pattern.matches(name):
                    return handler, f'module_name:{pattern.pattern}'
        if module is not None:
            for type_, handler in self.object_type:
                if _type_matches(type_, module):
                    type_name = getattr(type_, '__name__', type_)
                    return handler, f'object_type:{type_name}'
        return None, None

    def check_names(self, names: Iterable[str]) -> None:
        """Raise ValueError for a ``module_name`` pattern that matches no
        module, instead of silently ignoring it."""
        names = list(names)
        for pattern, _ in self.module_name:
            if not any(pattern.matches(n) for n in names):
                raise ValueError(
                    f'qconfig_mapping.module_name "{pattern.pattern}" matches '
                    'no module of the model; check the name (see '
                    '`model.named_modules()`)')
