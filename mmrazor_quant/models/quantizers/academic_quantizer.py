"""Quantizer for research: any scheme, per-layer qconfigs."""
import copy
import fnmatch
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

from torch import fx, nn

from mmrazor_quant.registry import MODELS
from mmrazor_quant.structures.quantization import QConfigHandler
from .base import BaseQuantizer
from .op_kinds import OpKind, classify_node
from .rules import InputSelector, QuantRules

__all__ = ['AcademicQuantizer']

Rules = Union[Dict[str, Any], Sequence[Tuple[str, Any]]]


def _pairs(rules: Optional[Rules], key: str) -> List[Tuple[str, Any]]:
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


@MODELS.register_module()
class AcademicQuantizer(BaseQuantizer):
    """The setting of the PTQ/QAT papers (LSQ, AdaRound, BRECQ, QDrop).

    Fake quants sit on the **inputs of conv, linear and matmul** only and
    on their weights; any scheme and bit width (2..16) is allowed.

    A ``qconfig_mapping`` chooses qconfigs per layer, most specific first:
    ``module_name`` (exact name or glob) > ``object_type`` (class or class
    name) > ``_global_``. A qconfig of ``None`` keeps the layer float.
    ``first_last_bit`` keeps the first and last conv/linear (weights and
    input) at that bit width, as the papers do.

    Args:
        global_qconfig (dict, optional): The global qconfig (same as
            ``qconfig_mapping['_global_']``).
        qconfig_mapping (dict, optional): ``dict(_global_=..., object_type=
            [(type, qconfig)], module_name=[(name, qconfig)])``.
        first_last_bit (int, optional): Bits for the first/last layer.
            Defaults to None (no special case).
        tracer (dict, optional): Tracer config.

    Raises:
        ValueError: If neither or both of ``global_qconfig`` and
            ``qconfig_mapping['_global_']`` are given.
    """
    backend = 'academic'
    rules = QuantRules(
        quantized_inputs={
            OpKind.CONV: InputSelector.FIRST,
            OpKind.LINEAR: InputSelector.FIRST,
            OpKind.MATMUL: InputSelector.ALL,
        })

    def __init__(self,
                 global_qconfig: Optional[dict] = None,
                 qconfig_mapping: Optional[dict] = None,
                 first_last_bit: Optional[int] = None,
                 tracer: Optional[dict] = None,
                 init_cfg: Optional[dict] = None) -> None:
        mapping = copy.deepcopy(qconfig_mapping or {})
        unknown = set(mapping) - {'_global_', 'object_type', 'module_name'}
        if unknown:
            raise KeyError(f'qconfig_mapping has unknown keys '
                           f'{sorted(unknown)}; allowed: _global_, '
                           'object_type, module_name')
        if (global_qconfig is None) == ('_global_' not in mapping):
            raise ValueError('AcademicQuantizer needs exactly one of '
                             "global_qconfig and qconfig_mapping['_global_']")
        global_qconfig = global_qconfig or mapping['_global_']
        super().__init__(global_qconfig, tracer=tracer, init_cfg=init_cfg)
        self.module_name_qconfigs = [
            (name, self._handler(q))
            for name, q in _pairs(mapping.get('module_name'), 'module_name')
        ]
        self.object_type_qconfigs = [
            (type_, self._handler(q))
            for type_, q in _pairs(mapping.get('object_type'), 'object_type')
        ]
        self.first_last_bit = first_last_bit
        self._first_last: Tuple[str, ...] = ()
        self._first_last_qconfig = None
        if first_last_bit is not None:
            bits = dict(bit=first_last_bit)
            self._first_last_qconfig = self.qconfig.replace(
                w_qscheme=bits, a_qscheme=bits)

    @staticmethod
    def _handler(qconfig: Optional[dict]) -> Optional[QConfigHandler]:
        return None if qconfig is None else QConfigHandler(qconfig)

    @staticmethod
    def _type_matches(type_: Union[str, type], module: nn.Module) -> bool:
        if isinstance(type_, type):
            return isinstance(module, type_)
        name = type(module).__name__
        qualified = f'{type(module).__module__}.{name}'
        return type_ in (name, qualified)

    def qconfig_for(self, module_name, module):
        if module_name is not None:
            for pattern, qconfig in self.module_name_qconfigs:
                if module_name == pattern or fnmatch.fnmatchcase(
                        module_name, pattern):
                    return qconfig, f'module_name:{pattern}'
        if module is not None:
            for type_, qconfig in self.object_type_qconfigs:
                if self._type_matches(type_, module):
                    name = getattr(type_, '__name__', type_)
                    return qconfig, f'object_type:{name}'
        if module_name in self._first_last:
            return self._first_last_qconfig, 'first_last'
        return self.qconfig, 'global'

    def trace(self, model: nn.Module,
              forward_modes: Sequence[str]) -> Dict[str, fx.Graph]:
        graphs = super().trace(model, forward_modes)
        if self.first_last_bit is not None:
            self._first_last = self._find_first_last(model, graphs)
        return graphs

    @staticmethod
    def _find_first_last(model: nn.Module,
                         graphs: Dict[str, fx.Graph]) -> Tuple[str, ...]:
        modules = dict(model.named_modules())
        graph = graphs.get('tensor', next(iter(graphs.values())))
        weighted = [
            str(n.target) for n in graph.nodes
            if classify_node(n, modules) in (OpKind.CONV, OpKind.LINEAR)
        ]
        return (weighted[0], weighted[-1]) if weighted else ()
