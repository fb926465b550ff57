"""The simulation a runtime's output is compared with: the deploy model
computing as that runtime's int8 kernels compute.

Two departures of the training graph's float32 arithmetic are modelled:

* **Accumulation.** An int8 conv or linear sums integer products in an
  int32 accumulator, exactly, and rounds once when it rescales the sum to
  float. The deploy model's float32 conv rounds every partial sum; a value
  near a rounding tie of the next quantizer can land on the other side.
  Such one-step flips are rare (about 1e-5 of the codes of a trained
  RTMDet-tiny) but a deep network multiplies them: with exact accumulation
  its lowest head-output SQNR against OpenVINO rose from 34.5 to 37.3 dB.
  onnxruntime runs a conv that an activation follows in float32, as the
  training graph does (a tiny YOLOv5's TensorRT export: 130 dB in float32,
  76 dB with exact sums), so only OpenVINO's simulation sums exactly.
* **Division.** onnxruntime's ``QuantizeLinear`` divides by the scale (see
  :func:`~mmrazor_quant.deploy.qdq_fake_quantize.quantize_by_division`).
"""
from contextlib import ExitStack, contextmanager
from typing import Iterator

from torch import nn

from mmrazor_quant.utils.attribute_scope import attribute_set
from .qdq_fake_quantize import quantize_by_division
from .runtimes import accumulates_exactly, quantizes_by_division
from .weight_quantized_layer import WeightQuantizedLayer

__all__ = ['exact_accumulation', 'runtime_arithmetic']


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


@contextmanager
def runtime_arithmetic(model: nn.Module, runtime: str) -> Iterator[nn.Module]:
    """Within the block, ``model`` (a deploy model) computes as
    ``runtime``'s kernels do: exact accumulation where it runs every
    quantized conv in int8, division where its ``QuantizeLinear``
    divides.

    Args:
        model (nn.Module): A deploy model.
        runtime (str): A registered runtime (see :mod:`.runtimes`).

    Yields:
        nn.Module: ``model``.
    """
    with ExitStack() as stack:
        if accumulates_exactly(runtime):
            stack.enter_context(exact_accumulation(model))
        stack.enter_context(
            quantize_by_division(model, quantizes_by_division(runtime)))
        yield model
