"""The format of a quantized model's state, and migrations between formats.

Where a backend quantizes (its placement) names the activation fake quants
of a traced model: ``act_fake_quants.<node>`` follows the output of
``<node>``. A placement change renames, adds or removes such fake quants, so
the state of a model prepared by an older release no longer matches. Each
change bumps :data:`QUANT_STATE_FORMAT` and ships a migration here.

The format is saved the way torch versions module state: as
:class:`MMArchitectureQuant`'s ``_version`` in the state dict's
``_metadata`` (any save path keeps it: ``model_ptq.pth``, the Runner's
``epoch_N.pth``, ``torch.save(model.state_dict())``), next to the package
version; checkpoints the loops write also carry both in their ``meta``
(:func:`quant_state_meta`). A state without a format (written by
mmrazor_quant 0.1.0) is format 1.

Formats (CHANGELOG.md):

* 1: mmrazor_quant 0.1.0, any placement of its history.
* 2: mmrazor_quant 0.2.0. Migrated from 1: OpenVINO's activation fake
  quants that followed a shape op or a max pool follow that op's input
  (renamed: the same qparams, the same outputs, as both ops commute with
  the quantizer); OpenVINO's fake quants of a residual branch that now
  stays float are dropped; RKNN's fake quant of the average pool's output
  is new, so it is reported for recalibration.
* 3: mmrazor_quant 0.3.0. OpenVINO quantizes no input of an add or mul
  by a constant (a scale-shift the plugin runs as a post-op, e.g.
  ScaleNorm's ``* g``, a ViT's score scale, PP-LCNet's ``x * s + b``):
  migrated from 2 by leaving out those fake quants (reported as not in the
  current placement; the model then rounds once where it rounded twice).
"""
import re
from dataclasses import dataclass, field
from typing import Dict, List, MutableMapping, Optional

from torch import fx, nn

__all__ = [
    'QUANT_STATE_FORMAT', 'MigrationReport', 'migrate_quant_state',
    'quant_state_meta', 'check_format_supported'
]

#: The format this release writes and reads.
QUANT_STATE_FORMAT = 3

_ACT = 'act_fake_quants.'
#: Ops that a per-tensor quantizer commutes with: their input and output
#: share one grid, so a fake quant on either gives the same outputs.
_GRID_KEEPING = ('shape', 'maxpool')


@dataclass
class MigrationReport:
    """What loading a state of an older format did.

    Attributes:
        from_format (int): The format of the state that was loaded.
        to_format (int): The format of this release.
        renamed (dict): Old fake-quant name -> new name (loaded as they
            were: same qparams, same outputs).
        unused (list): Fake quants of the old placement that the current
            one does not have (not loaded).
        recalibrate (list): Fake quants of the current placement that the
            state does not have: calibrate (or train) again before use.
    """
    from_format: int
    to_format: int = QUANT_STATE_FORMAT
    renamed: Dict[str, str] = field(default_factory=dict)
    unused: List[str] = field(default_factory=list)
    recalibrate: List[str] = field(default_factory=list)

    def __bool__(self) -> bool:
        """Whether the migration changed anything."""
        return bool(self.renamed or self.unused or self.recalibrate)

    def __str__(self) -> str:
        lines = [f'quantization state of format {self.from_format} '
                 f'migrated to format {self.to_format}']
        if self.renamed:
            lines.append('renamed (loaded as they were): ' + ', '.join(
                f'{a} -> {b}' for a, b in self.renamed.items()))
        if self.unused:
            lines.append('not in the current placement (not loaded): ' +
                         ', '.join(self.unused))
        if self.recalibrate:
            lines.append('not in the checkpoint, calibrate again: ' +
                         ', '.join(self.recalibrate))
        return '; '.join(lines)


def quant_state_meta() -> dict:
    """``{'mmrazor_quant': {'version': ..., 'quant_state_format': ...}}``,
    for a checkpoint's ``meta``."""
    from mmrazor_quant import __version__
    return dict(mmrazor_quant=dict(
        version=__version__, quant_state_format=QUANT_STATE_FORMAT))


def check_format_supported(found: int, written_by: Optional[str]) -> None:
    """Refuse a state of a newer format than this release reads.

    Raises:
        ValueError: Naming both formats and the releases.
    """
    if found > QUANT_STATE_FORMAT:
        from mmrazor_quant import __version__
        by = f' (written by mmrazor_quant {written_by})' if written_by else ''
        raise ValueError(
            f'the checkpoint holds quantization-state format {found}{by}, '
            f'newer than format {QUANT_STATE_FORMAT}, the newest that '
            f'mmrazor_quant {__version__} reads: upgrade mmrazor_quant')


def _fake_quant_names(keys, prefix: str) -> Dict[str, List[str]]:
    """``{fake-quant name: [its keys]}`` of the act fake quants in
    ``keys`` under ``prefix`` (``'architecture.'``)."""
    names: Dict[str, List[str]] = {}
    pattern = re.compile(re.escape(prefix + _ACT) + r'([^.]+)\.')
    for key in keys:
        match = pattern.match(key)
        if match:
            names.setdefault(match[1], []).append(key)
    return names


def _nodes_by_fake_quant_name(graph: fx.Graph) -> Dict[str, fx.Node]:
    """Every node under the name a fake quant of its output gets (its
    tensor key, as the insertion pass names them)."""
    from mmrazor_quant.models.quantizers.passes.insert_fake_quants import (
        tensor_keys,
    )
    return {
        re.sub(r'[^0-9a-zA-Z_]', '_', key): node
        for node, key in tensor_keys(graph).items()
    }


def _producer_fake_quant(node: Optional[fx.Node],
                         modules: Dict[str, nn.Module]) -> Optional[str]:
    """The fake quant on the input of ``node`` when it is a grid-keeping op
    (shape op, max pool); None otherwise."""
    from mmrazor_quant.models.quantizers.op_kinds import classify_node
    if node is None or classify_node(node, modules) not in _GRID_KEEPING:
        return None
    inputs = node.all_input_nodes
    if not inputs or inputs[0].op != 'call_module' or \
            not str(inputs[0].target).startswith(_ACT):
        return None
    return str(inputs[0].target)[len(_ACT):]


def migrate_quant_state(model,
                        state_dict: MutableMapping,
                        prefix: str,
                        found: int,
                        written_by: Optional[str] = None
                        ) -> Optional[MigrationReport]:
    """Bring ``state_dict`` (of ``model``, an ``MMArchitectureQuant``, at
    ``prefix``) from format ``found`` to :data:`QUANT_STATE_FORMAT` in
    place. None when it already is.

    Args:
        written_by (str, optional): The release that wrote it, for the
            error.

    Raises:
        ValueError: If ``found`` is newer than this release reads.
    """
    check_format_supported(found, written_by)
    if found == QUANT_STATE_FORMAT:
        return None
    report = MigrationReport(from_format=found)
    # 1 -> 2 renames and drops, 2 -> 3 drops: one reconciliation with the
    # current placement does both (a fake quant that no grid-keeping op
    # moved is one the placement no longer has).
    _to_current_placement(model, state_dict, prefix, report)
    return report


def _to_current_placement(model, state_dict: MutableMapping, prefix: str,
                          report: MigrationReport) -> None:
    """Formats 1 and 2 -> 3 (see the module docstring)."""
    arch = prefix + 'architecture.'
    own = _fake_quant_names(model.state_dict().keys(), arch)
    old = _fake_quant_names(list(state_dict.keys()), arch)
    graphs = [(_nodes_by_fake_quant_name(gm.graph),
               dict(gm.named_modules())) for gm in model.qmodels.values()]
    for name in sorted(set(old) - set(own)):
        new = next((p for nodes, modules in graphs
                    for p in [_producer_fake_quant(nodes.get(name), modules)]
                    if p is not None), None)
        if new is not None and new in own and new not in old:
            for key in old[name]:
                state_dict[key.replace(f'{arch}{_ACT}{name}.',
                                       f'{arch}{_ACT}{new}.', 1)] = \
                    state_dict.pop(key)
            report.renamed[name] = new
            old[new] = old.pop(name)
        else:
            for key in old.pop(name):
                del state_dict[key]
            report.unused.append(name)
    report.recalibrate = sorted(set(own) - set(old))
