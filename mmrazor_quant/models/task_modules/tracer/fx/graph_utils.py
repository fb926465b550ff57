"""MMRazor's ``del_fakequant_{before,after}_{module,function,method,op}``.

They edited one forward mode's torch.ao-prepared graph. Here every mode's
graph shares its fake quants, so one graph alone must not lose them: the
quantizer's ``extra_redundant_fakequants`` removes them from all modes.
"""
from mmrazor_quant.compat.torch_ao import not_supported

__all__ = [
    'del_fakequant_before_module', 'del_fakequant_after_module',
    'del_fakequant_before_function', 'del_fakequant_after_function',
    'del_fakequant_before_method', 'del_fakequant_after_method',
    'del_fakequant_before_op', 'del_fakequant_after_op'
]


def _stand_in(kind: str, side: str):
    key = f'extra_{kind}_{"prev" if side == "before" else "next"}' \
        '_wo_fakequant'
    return not_supported(
        f'del_fakequant_{side}_{kind}',
        f'the quantizer argument extra_redundant_fakequants=dict({key}=...), '
        'which removes them from every forward mode',
        reason="it edits one forward mode's graph, and all modes share "
        'their fake quants here')


del_fakequant_before_module = _stand_in('module', 'before')
del_fakequant_after_module = _stand_in('module', 'after')
del_fakequant_before_function = _stand_in('function', 'before')
del_fakequant_after_function = _stand_in('function', 'after')
del_fakequant_before_method = _stand_in('method', 'before')
del_fakequant_after_method = _stand_in('method', 'after')
del_fakequant_before_op = _stand_in('op', 'before')
del_fakequant_after_op = _stand_in('op', 'after')
