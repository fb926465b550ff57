"""Tracing the branches a model takes in training."""
import contextlib
from typing import Iterator

import torch

__all__ = ['training_branches']


@contextlib.contextmanager
def training_branches(model: torch.nn.Module) -> Iterator[None]:
    """Trace the branches a model takes in training (DDRNet's and PIDNet's
    backbones and heads return their auxiliary outputs only then, YOLOv8's
    and PPYOLOE's heads their distribution logits): the ``training`` flag
    of every module set meanwhile, except normalisation and dropout, which
    stay graph leaves that follow the run-time mode (and whose statistics
    the trace's example values must not move)."""
    from torch.nn.modules.batchnorm import _BatchNorm
    from torch.nn.modules.dropout import _DropoutNd
    saved = [(m, m.training) for m in model.modules()
             if not isinstance(m, (_BatchNorm, _DropoutNd))]
    try:
        for module, _ in saved:
            module.training = True
        yield
    finally:
        for module, mode in saved:
            module.training = mode
