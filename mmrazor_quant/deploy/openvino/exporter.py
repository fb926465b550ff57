"""Exporter for OpenVINO's CPU plugin."""
import onnx

from mmrazor_quant.registry import EXPORTERS
from ..exporters.base import BaseExporter
from .layout_quantize import quantize_before_layout_ops
from .passes import (
    guard_fused_sum_inputs,
    guard_shared_quantize_inputs,
    linear_zero_points_into_bias,
    signed_grids_as_int8,
)

__all__ = ['OpenVINOExporter']


@EXPORTERS.register_module()
class OpenVINOExporter(BaseExporter):
    """QDQ ONNX for OpenVINO, which reads each Q/DQ pair as a FakeQuantize
    and runs the ops whose inputs carry one in int8.

    ``OpenVINOQuantizer`` leaves float the conv output a residual ``Add``
    is fused into, so the plugin runs conv, sum, ReLU and the next
    quantization as one int8 kernel, exactly as simulated. Where every input
    of such an ``Add`` quantizes a conv/linear output (other placements),
    the written model has a value-preserving ``Max`` before those inputs
    (see :func:`guard_fused_sum_inputs`): without it the CPU plugin fuses
    the ``Add`` as a sum post-op and skips the rounding of that input's
    ``FakeQuantize``, drifting from the simulation. It has the same ``Max``
    before each
    ``QuantizeLinear`` on a conv output that a float consumer reads too (an
    FPN lateral conv feeding the upsampling; see
    :func:`guard_shared_quantize_inputs`), where the plugin would otherwise
    quantize against a wrongly rescaled range (every element its
    zero-point). A
    signed tensor on an unsigned symmetric grid (zero-point 128) is written
    as int8 with zero-point 0, the same levels, so the plugin runs the convs
    reading it as i8 kernels without zero-point compensation, as NNCF's
    signed activations (see :func:`signed_grids_as_int8`). A quantizer
    that reads a conv/linear output through reshapes and transposes
    (``flatten(2).transpose(1, 2)`` in transformers) is written right after
    the conv/linear (see :func:`quantize_before_layout_ops`): behind a
    ``Reshape`` with a dynamic batch the plugin rescales every channel with
    channel 0's dequantization scale. The zero-point of an asymmetric
    activation that a linear layer reads moves into the layer's bias, so
    the plugin's fully connected kernel applies native weight scales and
    one bias add instead of three per-channel post-ops (see
    :func:`linear_zero_points_into_bias`).

    Raises:
        ValueError: From :meth:`export` if a fake quant's scheme is not one
            ``OpenVINOQuantizer``'s spec declares (e.g. more than 8 bits:
            its int8 kernels take at most 256 levels).
    """
    backend = 'openvino'

    def final_model(self, onnx_model: onnx.ModelProto) -> onnx.ModelProto:
        model = super().final_model(onnx_model)
        signed_grids_as_int8(model)
        quantize_before_layout_ops(model)
        linear_zero_points_into_bias(model)
        guard_fused_sum_inputs(model)
        guard_shared_quantize_inputs(model)
        onnx.checker.check_model(model, full_check=True)
        return model

    def verify_loads(self, path: str) -> None:
        import openvino as ov
        ov.Core().read_model(path)
