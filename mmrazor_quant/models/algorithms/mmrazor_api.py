"""MMRazor's ``MMArchitectureQuant`` methods that have nothing to do here,
kept so that MMRazor's loops and hooks run: each says once why."""
from typing import Optional, Sequence

from mmengine.logging import print_log

__all__ = ['MMArchitectureQuantAPIMixin', 'note_input_shapes']


def note_input_shapes(input_shapes: Optional[Sequence[int]]) -> None:
    """Log that MMRazor's ``input_shapes`` (the shape of a dummy forward
    run in the constructor) is not used."""
    if input_shapes is None:
        return
    print_log(
        f'MMArchitectureQuant: input_shapes={tuple(input_shapes)} is not '
        'used: no dummy forward runs at build time (per-channel qparams are '
        'sized from the weights). Give input_shape=(C, H, W) if tracing '
        'needs a shape', logger='current')


class MMArchitectureQuantAPIMixin:
    """``sync_qparams`` of MMRazor's ``MMArchitectureQuant``."""

    def sync_qparams(self, src_mode: str) -> None:
        """A no-op: every forward mode's graph calls the same fake quants,
        so there is nothing to copy (MMRazor copied qparams from the
        ``src_mode`` graph to the others). Logs that once per model.

        Raises:
            ValueError: If ``src_mode`` was not traced.
        """
        if src_mode not in self.forward_modes:
            raise ValueError(f'sync_qparams: src_mode {src_mode!r} is not one '
                             f'of forward_modes={self.forward_modes}')
        if not getattr(self, '_sync_qparams_noted', False):
            self._sync_qparams_noted = True
            print_log(
                'MMArchitectureQuant.sync_qparams: nothing to sync, all '
                f'forward modes {self.forward_modes} share one set of fake '
                'quants', logger='current')
