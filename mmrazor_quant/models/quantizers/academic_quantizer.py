"""Quantizer for research: any scheme, first/last layer at higher precision."""
from typing import Dict, Optional, Sequence, Tuple

from torch import fx, nn

from mmrazor_quant.registry import MODELS
from .base import BaseQuantizer
from .mmrazor_compat import check_prepare_custom_config
from .op_kinds import OpKind, classify_node
from .rules import InputSelector, QuantRules

__all__ = ['AcademicQuantizer']


@MODELS.register_module()
class AcademicQuantizer(BaseQuantizer):
    """The setting of the PTQ/QAT papers (LSQ, AdaRound, BRECQ, QDrop).

    Fake quants sit on the **inputs of conv, linear and matmul** (both
    attention matmuls) only and on their weights; any scheme and bit width
    (2..16) is allowed.
    Per-layer qconfigs come from ``qconfig_mapping`` as for every quantizer
    (see :class:`BaseQuantizer`); ``first_last_bit`` keeps the first and
    last conv/linear (weights and input) at that bit width, as the papers
    do, unless a ``qconfig_mapping`` rule names them.

    Args:
        global_qconfig (dict, optional): The global qconfig.
        qconfig_mapping (dict, optional): Per-layer rules and ``_global_``.
        first_last_bit (int, optional): Bits for the first/last layer.
            Defaults to None (no special case).
        tracer (dict, optional): Tracer config.
        init_cfg (dict, optional): Defaults to None.
        prepare_custom_config (dict, optional): MMRazor's key; its
            ``preserved_attributes`` are copied from the model onto every
            prepared GraphModule. Defaults to None.
        **kwargs: ``no_observer_modules``, ``extra_redundant_fakequants``
            (see :class:`BaseQuantizer`).
    """
    backend = 'academic'
    rules = QuantRules(
        quantized_inputs={
            OpKind.CONV: InputSelector.FIRST,
            OpKind.LINEAR: InputSelector.FIRST,
            OpKind.MATMUL: InputSelector.ALL,
            OpKind.ATTN_MATMUL: InputSelector.ALL,
        })

    def __init__(self,
                 global_qconfig: Optional[dict] = None,
                 qconfig_mapping: Optional[dict] = None,
                 first_last_bit: Optional[int] = None,
                 tracer: Optional[dict] = None,
                 init_cfg: Optional[dict] = None,
                 prepare_custom_config: Optional[dict] = None,
                 **kwargs) -> None:
        super().__init__(
            global_qconfig,
            qconfig_mapping=qconfig_mapping,
            tracer=tracer,
            init_cfg=init_cfg,
            **kwargs)
        self.preserved_attributes = check_prepare_custom_config(
            prepare_custom_config)
        self.first_last_bit = first_last_bit
        self._first_last: Tuple[str, ...] = ()
        self._first_last_qconfig = None
        if first_last_bit is not None:
            bits = dict(bit=first_last_bit)
            self._first_last_qconfig = self.qconfig.replace(
                w_qscheme=bits, a_qscheme=bits)

    def qconfig_for(self, module_name, module):
        qconfig, tag = self.qconfig_mapping.lookup(module_name, module)
        if tag is not None:
            return qconfig, tag
        if module_name in self._first_last:
            return self._first_last_qconfig, 'first_last'
        return self.qconfig, 'global'

    def trace(self, model: nn.Module,
              forward_modes: Sequence[str]) -> Dict[str, fx.Graph]:
        graphs = super().trace(model, forward_modes)
        if self.first_last_bit is not None:
            self._first_last = self._find_first_last(model, graphs)
        return graphs

    def prepare(self, model: nn.Module,
                forward_modes: Sequence[str] = ('tensor', )
                ) -> Dict[str, fx.GraphModule]:
        missing = [a for a in self.preserved_attributes
                   if not hasattr(model, a)]
        if missing:
            raise AttributeError(f'prepare_custom_config.preserved_attributes'
                                 f' {missing} are not attributes of '
                                 f'{type(model).__name__}')
        qmodels = super().prepare(model, forward_modes)
        for gm in qmodels.values():
            for attr in self.preserved_attributes:
                setattr(gm, attr, getattr(model, attr))
        return qmodels

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
