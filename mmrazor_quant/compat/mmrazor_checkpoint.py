"""Load a checkpoint saved by MMRazor's ``MMArchitectureQuant`` (LSQ QAT).

MMRazor's state dict holds the float model under ``architecture.`` and one
torch.ao-prepared GraphModule per forward mode under ``qmodels.<mode>.``,
all sharing the weights. In a mode's GraphModule:

* a Conv+BN(+ReLU) is one torch.ao QAT module at the conv's path
  (``backbone.conv1.weight``, ``backbone.conv1.bn.*``), a Linear at its own;
  this project fuses to the same paths, so these keys map one to one;
* its weight fake quant is ``<path>.weight_fake_quant.*``: ``scale``,
  ``zero_point``, ``fake_quant_enabled``, ``observer_enabled``,
  ``static_enabled``, ``learning_enabled``, ``eps`` and the observer under
  ``activation_post_process.`` (``eps``, ``min_val``, ``max_val``);
* activation fake quants are ``activation_post_process_<N>.*`` on the
  GraphModule root, numbered in the order torch.ao's ``prepare`` inserted
  them. That order follows torch.ao's BackendConfig and is not recorded in
  the checkpoint, and this project places activation fake quants by its
  own rules (named after the tensor, e.g. ``act_fake_quants.backbone_conv1``),
  so they cannot be matched from the state dict alone: they are left
  uncalibrated unless ``activation_map`` names the MMRazor module of each.

Key mapping of one fake quant (ours <- MMRazor's): ``scale`` <- ``scale``,
``zero_point`` <- ``zero_point``, ``fake_quant_enabled`` <- same,
``observer_enabled`` <- ``static_enabled`` (LSQ; ``observer_enabled`` for
other fake quants), ``observer.min_val``/``max_val`` <-
``activation_post_process.min_val``/``max_val``; ``initialized`` is set.
MMRazor's ``learning_enabled`` and ``eps`` have no counterpart (the scale's
``requires_grad`` and float32 eps). Shape-``[1]`` per-tensor qparams become
0-d.
"""
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple, Union

import torch
from torch import Tensor, nn

__all__ = [
    'MMRazorCheckpointReport', 'convert_mmrazor_state_dict',
    'load_mmrazor_checkpoint'
]

_OURS = 'architecture.'
_ACT = 'act_fake_quants.'
_WFQ = 'weight_fake_quant.'
#: MMRazor keys of a fake quant with no counterpart here.
_DROPPED = ('learning_enabled', 'eps', 'activation_post_process.eps')
_OBSERVER_KEYS = {
    'observer.min_val': 'activation_post_process.min_val',
    'observer.max_val': 'activation_post_process.max_val',
}


@dataclass
class MMRazorCheckpointReport:
    """What :func:`convert_mmrazor_state_dict` mapped.

    Attributes:
        loaded (int): Number of tensors taken from the checkpoint.
        unmapped_activations (list[str]): Our activation fake quants left
            uncalibrated (no ``activation_map`` entry).
        mmrazor_activations (list[str]): MMRazor's
            ``activation_post_process_N`` modules of the mode not used.
        unused (list[str]): Other checkpoint keys of the mode not used.
    """
    loaded: int = 0
    unmapped_activations: List[str] = field(default_factory=list)
    mmrazor_activations: List[str] = field(default_factory=list)
    unused: List[str] = field(default_factory=list)


def _fake_quant_source(sub: str, prefix: str,
                       state_dict: Dict[str, Tensor]) -> Optional[str]:
    """The MMRazor key of our fake-quant entry ``sub`` under ``prefix``."""
    if sub in ('scale', 'zero_point', 'fake_quant_enabled'):
        return prefix + sub
    if sub == 'observer_enabled':
        lsq = prefix + 'static_enabled'
        return lsq if lsq in state_dict else prefix + 'observer_enabled'
    if sub in _OBSERVER_KEYS:
        return prefix + _OBSERVER_KEYS[sub]
    return None  # ours only (initialized, observer moments)


def _fit(value: Tensor, ours: Tensor, src: str, dst: str) -> Tensor:
    """``value`` in ``ours``'s dtype and shape (``[1]`` -> 0-d; per-channel
    tensors keep the checkpoint's size, as our loading resizes them)."""
    if ours.dim() == 0 and value.numel() == 1:
        value = value.reshape(())
    elif ours.shape != value.shape and not (ours.dim() == 1 and
                                            value.dim() == 1 and
                                            ours.numel() == 0):
        raise ValueError(f'MMRazor checkpoint: {src} has shape '
                         f'{tuple(value.shape)} but {dst} has '
                         f'{tuple(ours.shape)}; the checkpoint was made for '
                         'another model')
    return value.to(ours.dtype)


def _mode_prefix(state_dict: Dict[str, Tensor], mode: str) -> str:
    modes = sorted({k.split('.')[1] for k in state_dict
                    if k.startswith('qmodels.')})
    if not modes:
        raise ValueError('not an MMRazor MMArchitectureQuant checkpoint: it '
                         "has no 'qmodels.<mode>.' keys")
    if mode not in modes:
        raise ValueError(f'MMRazor checkpoint has no forward mode {mode!r}; '
                         f'it has {modes}')
    return f'qmodels.{mode}.'


def convert_mmrazor_state_dict(
        state_dict: Dict[str, Tensor],
        model: nn.Module,
        mode: str = 'predict',
        activation_map: Optional[Dict[str, str]] = None
) -> Tuple[Dict[str, Tensor], MMRazorCheckpointReport]:
    """Map an MMRazor ``MMArchitectureQuant`` state dict onto ``model``'s
    keys (see the module docstring for the layout).

    Args:
        state_dict (dict): MMRazor's ``state_dict`` (a ``module.`` prefix of
            a DDP wrapper is removed).
        model (nn.Module): Our ``MMArchitectureQuant``, built from the same
            architecture.
        mode (str): The forward mode whose GraphModule to read (MMRazor
            synced every mode after each epoch; its own deploy converter
            read ``predict``). Defaults to ``'predict'``.
        activation_map (dict, optional): Our activation fake-quant name
            (e.g. ``'backbone_conv1'``) -> MMRazor's module name (e.g.
            ``'activation_post_process_1'``). Defaults to None (activation
            fake quants are left uncalibrated).

    Returns:
        tuple: The state dict to load (``strict=False``) and a
        :class:`MMRazorCheckpointReport`.

    Raises:
        ValueError: If the checkpoint is not MMRazor's, lacks ``mode``, or a
            tensor the model needs is missing or has another shape.
    """
    from mmrazor_quant.utils.state_dict_check import strip_wrapper_prefix
    state_dict = strip_wrapper_prefix(dict(state_dict))
    src_prefix = _mode_prefix(state_dict, mode)
    activation_map = dict(activation_map or {})
    report = MMRazorCheckpointReport()
    out, used, unmapped = {}, set(), set()
    for key, ours in model.state_dict().items():
        if not key.startswith(_OURS):
            continue
        rel = key[len(_OURS):]
        if rel.startswith(_ACT):
            name, sub = rel[len(_ACT):].split('.', 1)
            if name not in activation_map:
                unmapped.add(name)
                continue
            src = _fake_quant_source(sub,
                                     f'{src_prefix}{activation_map[name]}.',
                                     state_dict)
        elif _WFQ in rel:
            path, sub = rel.split(_WFQ, 1)
            src = _fake_quant_source(sub, f'{src_prefix}{path}{_WFQ}',
                                     state_dict)
        else:
            src = src_prefix + rel
            if src not in state_dict and 'architecture.' + rel in state_dict:
                src = 'architecture.' + rel
        if src is None:
            continue
        if src not in state_dict:
            raise ValueError(f'MMRazor checkpoint has no {src!r} for {key!r}'
                             '; was it saved from the same architecture?')
        out[key] = _fit(state_dict[src], ours, src, key)
        used.add(src)
    # A fake quant whose scale was loaded is calibrated.
    for key, ours in model.state_dict().items():
        if key.endswith('.initialized') and key[:-len('initialized')] + \
                'scale' in out:
            out[key] = torch.ones_like(ours)
    _fill_report(report, state_dict, src_prefix, used, unmapped,
                 activation_map)
    report.loaded = len(used)
    return out, report


def _fill_report(report: MMRazorCheckpointReport, state_dict: dict,
                 prefix: str, used: set, unmapped: set,
                 activation_map: Dict[str, str]) -> None:
    mapped_acts = set(activation_map.values())
    acts, unused = set(), []
    for key in state_dict:
        if not key.startswith(prefix) or key in used:
            continue
        rel = key[len(prefix):]
        head = rel.split('.', 1)[0]
        if head.startswith('activation_post_process_'):
            if head not in mapped_acts:
                acts.add(head)
            continue
        if rel.endswith(_DROPPED) or (rel.endswith('observer_enabled')
                                      and _WFQ in rel):
            continue
        unused.append(key)
    report.unmapped_activations = sorted(unmapped)
    report.mmrazor_activations = sorted(
        acts, key=lambda n: int(n.rsplit('_', 1)[1]))
    report.unused = unused


def load_mmrazor_checkpoint(
        model: nn.Module,
        checkpoint: Union[str, dict],
        mode: str = 'predict',
        activation_map: Optional[Dict[str, str]] = None
) -> MMRazorCheckpointReport:
    """Load an MMRazor LSQ/QAT checkpoint (a path or a loaded dict) into our
    ``MMArchitectureQuant`` and log what was left out.

    Weights, BN statistics and weight fake quants load; activation fake
    quants not named in ``activation_map`` stay uncalibrated: run PTQ
    calibration, or train on with the LSQ loop, whose first iteration
    initialises them. See :func:`convert_mmrazor_state_dict`.

    Returns:
        MMRazorCheckpointReport: What was mapped.

    Raises:
        ValueError: See :func:`convert_mmrazor_state_dict`; also if
            ``unused`` checkpoint keys remain (another model).
    """
    from mmengine.logging import print_log
    if isinstance(checkpoint, str):
        from mmrazor_quant.utils.checkpoint import read_checkpoint
        checkpoint = read_checkpoint(checkpoint, 'MMRazor checkpoint')
    state_dict = checkpoint.get('state_dict', checkpoint)
    converted, report = convert_mmrazor_state_dict(state_dict, model, mode,
                                                   activation_map)
    if report.unused:
        raise ValueError(f'MMRazor checkpoint keys {report.unused[:5]} (of '
                         f'{len(report.unused)}) have no place in '
                         f'{type(model).__name__}: it was saved from another '
                         'architecture')
    model.load_state_dict(converted, strict=False)
    print_log(
        f'MMRazor checkpoint: loaded {report.loaded} tensors of mode '
        f'{mode!r}; {len(report.unmapped_activations)} activation fake '
        'quants left uncalibrated (MMRazor numbered its '
        f'{len(report.mmrazor_activations)} activation_post_process_N by '
        "torch.ao's insertion order, which the checkpoint does not record; "
        'pass activation_map, calibrate, or let the LSQ loop initialise them)',
        logger='current')
    return report
