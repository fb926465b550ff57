"""Exact accumulation, one of the departures from the training graph's
float32 arithmetic that a runtime declares (see
:class:`~mmrazor_quant.deploy.runtimes.BaseRuntime`).

Exact accumulation: an int8 conv or linear sums integer products in an
int32 accumulator, exactly, and rounds once when it rescales the sum to
float. The deploy model's float32 conv rounds every partial sum; a value
near a rounding tie of the next quantizer can land on the other side. Such
one-step flips are rare (about 1e-5 of the codes of a trained RTMDet-tiny),
but a deep network multiplies them.
"""
from contextlib import contextmanager
from typing import Iterator

from torch import nn

from mmrazor_quant.utils.attribute_scope import attribute_set
from .weight_quantized_layer import WeightQuantizedLayer

__all__ = ['exact_accumulation']


@contextmanager
def exact_accumulation(model: nn.Module) -> Iterator[nn.Module]:
    """Within the block, every :class:`WeightQuantizedLayer` of ``model``
    (a deploy model) sums its products in float64 and rounds the sum once,
    before adding its bias, as an int32 accumulator followed by a float
    rescale does."""
    layers = [m for m in model.modules()
              if isinstance(m, WeightQuantizedLayer)]
    with attribute_set(layers, 'exact_accumulation', True):
        yield model
