"""Automatic mixed precision: keep the most sensitive layers at a higher
bit width (or float) and express the choice as per-layer qconfigs.

The result is a list of ``qconfig_mapping.module_name`` rules, exactly what
a quantizer config takes, so the mixed model is built, calibrated and
exported like any other:

.. code-block:: python

    rules = select_by_budget(layerwise_sensitivity(model, inputs), 3)
    # [('backbone.conv1.conv', dict(w_qscheme=dict(bit=8),
    #                               a_qscheme=dict(bit=8))), ...]
    write_mixed_precision_config('configs/.../ptq_w4a4.py', rules, 'out.py')
"""
import os
import os.path as osp
from typing import Callable, List, Optional, Sequence, Tuple, Union

import torch
from torch import Tensor, nn

from mmrazor_quant.models.utils import tensor_graph_module
from .graphwise import LayerError, analysis_mode, worst_first
from .layers import find_quantized_layers

__all__ = [
    'high_precision_qconfig', 'mixed_precision_rules', 'rank_layers',
    'select_by_budget', 'select_by_accuracy', 'write_mixed_precision_config',
    'float_layers_evaluator'
]

Rule = Tuple[str, Optional[dict]]


def high_precision_qconfig(bit: Union[int, str] = 8) -> Optional[dict]:
    """The partial qconfig that lifts a layer's weights and input to
    ``bit`` bits; ``'float'`` (or None) keeps the layer float.

    Raises:
        ValueError: If ``bit`` is neither an int in [2, 16] nor ``'float'``.
    """
    if bit is None or bit == 'float':
        return None
    if isinstance(bit, bool) or not isinstance(bit, int) or not \
            2 <= bit <= 16:
        raise ValueError(f"bit must be an int in [2, 16] or 'float', "
                         f'got {bit!r}')
    return dict(w_qscheme=dict(bit=bit), a_qscheme=dict(bit=bit))


def rank_layers(sensitivity: Sequence[LayerError],
                metric: str = 'snr') -> List[str]:
    """Layer names from the most to the least sensitive.

    With several parts per layer (``weight``/``activation``/``both``), a
    layer ranks by its worst part.
    """
    names: List[str] = []
    for record in worst_first(sensitivity, metric):
        if record.name not in names:
            names.append(record.name)
    return names


def mixed_precision_rules(names: Sequence[str],
                          bit: Union[int, str] = 8) -> List[Rule]:
    """``qconfig_mapping.module_name`` rules keeping ``names`` at ``bit``
    bits (or float).

    Exact module names never contain glob characters, so each rule matches
    its layer only.
    """
    qconfig = high_precision_qconfig(bit)
    return [(name, None if qconfig is None else dict(
        w_qscheme=dict(qconfig['w_qscheme']),
        a_qscheme=dict(qconfig['a_qscheme']))) for name in names]


def select_by_budget(sensitivity: Sequence[LayerError],
                     max_layers: int,
                     bit: Union[int, str] = 8,
                     metric: str = 'snr') -> List[Rule]:
    """Keep the ``max_layers`` most sensitive layers at ``bit`` bits.

    Args:
        sensitivity (Sequence[LayerError]): From
            :func:`~.layerwise.layerwise_sensitivity`.
        max_layers (int): The budget, >= 0.
        bit (int | str): 8 by default, or ``'float'``.
        metric (str): ``'snr'``, ``'cosine'`` or ``'mse'``. Defaults to
            ``'snr'``.

    Returns:
        list: ``(module name, partial qconfig or None)`` rules.

    Raises:
        ValueError: If ``max_layers`` is negative or not an int.
    """
    if isinstance(max_layers, bool) or not isinstance(max_layers, int) \
            or max_layers < 0:
        raise ValueError(f'max_layers must be an int >= 0, got {max_layers!r}')
    return mixed_precision_rules(
        rank_layers(sensitivity, metric)[:max_layers], bit)


def select_by_accuracy(sensitivity: Sequence[LayerError],
                       evaluate: Callable[[List[Rule]], float],
                       reference: float,
                       max_drop: float,
                       bit: Union[int, str] = 8,
                       metric: str = 'snr',
                       max_layers: Optional[int] = None
                       ) -> Tuple[List[Rule], List[Tuple[int, float]]]:
    """Add layers in order of sensitivity until the accuracy is within
    ``max_drop`` of ``reference``.

    Args:
        sensitivity (Sequence[LayerError]): Layer-wise sensitivity.
        evaluate (callable): Takes rules, returns the accuracy of the model
            quantized with them (e.g. build + calibrate + test, or the
            cheap proxy :func:`float_layers_evaluator`).
        reference (float): The accuracy to stay close to (fp32).
        max_drop (float): Tolerated drop, same unit as ``reference``.
        bit (int | str): Defaults to 8.
        metric (str): Ranking metric. Defaults to ``'snr'``.
        max_layers (int, optional): Stop after this many layers even if the
            drop is not met. Defaults to all layers.

    Returns:
        tuple: The rules, and the ``(number of layers, accuracy)`` history.
    """
    ranked = rank_layers(sensitivity, metric)
    limit = len(ranked) if max_layers is None else min(max_layers,
                                                       len(ranked))
    history = []
    for count in range(limit + 1):
        rules = mixed_precision_rules(ranked[:count], bit)
        accuracy = evaluate(rules)
        history.append((count, accuracy))
        if reference - accuracy <= max_drop:
            break
    return rules, history


def write_mixed_precision_config(base_config: str, rules: Sequence[Rule],
                                 path: str) -> str:
    """Write a config that inherits ``base_config`` and adds ``rules`` to
    its quantizer's ``qconfig_mapping.module_name``.

    The base keeps its ``global_qconfig``; the new file only sets
    ``model.quantizer.qconfig_mapping.module_name``, so it is built,
    calibrated (``tools/ptq.py``) and exported like the base.

    Returns:
        str: ``path``.
    """
    base = osp.relpath(osp.abspath(base_config),
                       osp.dirname(osp.abspath(path)))
    lines = [
        '# Mixed precision picked by mmrazor_quant.analysis '
        '(select_by_budget /',
        '# select_by_accuracy) from the layer-wise sensitivity of the base '
        'config.',
        f'_base_ = [{base!r}]',
        '',
        'model = dict(',
        '    quantizer=dict(',
        '        qconfig_mapping=dict(module_name=[',
    ]
    for name, qconfig in rules:
        lines += [f'            ({name!r},',
                  f'             {_format_value(qconfig)}),']
    lines += ['        ])))', '']
    os.makedirs(osp.dirname(osp.abspath(path)), exist_ok=True)
    with open(path, 'w') as f:
        f.write('\n'.join(lines))
    return path


def float_layers_evaluator(model: nn.Module,
                           batches: Sequence[Tuple[Tensor, Tensor]]
                           ) -> Callable[[List[Rule]], float]:
    """A cheap ``evaluate`` for :func:`select_by_accuracy`: top-1 (in %)
    of the calibrated ``model`` on ``batches`` of ``(inputs, labels)`` with
    the fake quants of the rules' layers (weights and input) turned off.

    It approximates "at 8 bit" by "float" and needs no recalibration; build
    the chosen config and run ``tools/ptq.py`` for the real number.
    """
    gm = tensor_graph_module(model)
    layers = {layer.name: layer for layer in find_quantized_layers(gm)}

    def evaluate(rules: List[Rule]) -> float:
        correct = total = 0
        with analysis_mode(gm), torch.no_grad():
            for name, _ in rules:
                for fq in layers[name].fake_quants('both'):
                    fq.disable_fake_quant()
            for x, labels in batches:
                logits = gm(x)
                correct += int((logits.argmax(-1) == labels).sum())
                total += labels.numel()
        return 100.0 * correct / max(total, 1)

    return evaluate


def _format_value(value) -> str:
    """``dict(a=dict(b=1))`` rather than ``{'a': {'b': 1}}``."""
    if isinstance(value, dict) and all(
            isinstance(k, str) and k.isidentifier() for k in value):
        return 'dict(' + ', '.join(
            f'{k}={_format_value(v)}' for k, v in value.items()) + ')'
    return repr(value)
