"""Exporter for TensorRT: explicit QDQ, or implicit float + ranges."""
from typing import Dict

import numpy as np
import onnx
from torch import fx

from mmrazor_quant.registry import EXPORTERS
from ..exporters.base import BaseExporter
from ..qparams_table import strip_qdq

__all__ = ['TensorRTExporter']


@EXPORTERS.register_module()
class TensorRTExporter(BaseExporter):
    """ONNX for TensorRT's int8 modes.

    * explicit (default): QDQ ONNX; TensorRT fuses each Q/DQ pair into the
      consuming op. Its ``QuantizeLinear`` saturates at -128, so an
      activation grid of ``[-127, 127]`` (MMRazor's TensorRT configs) gets a
      ``Max`` at ``-127 * scale`` before it, as the simulation clamps there;
      activations on the full ``[-128, 127]`` need none and export as bare
      pairs. ``clip_narrow_range=False`` drops the ``Max`` (faster engine
      fusion, but values below the grid then reach -128, where the
      simulation clamps at -127);
    * ``implicit=True``: the float model (Q/DQ pairs removed, weights on
      their grid) plus ``<stem>.ranges.json`` mapping each quantized ONNX
      tensor to its dynamic range ``amax = scale * 127`` (what
      ``ITensor.set_dynamic_range(-amax, amax)`` takes).

    TensorRT's int8 is signed symmetric with zero-point 0.

    Args:
        implicit (bool): Write the implicit-mode files. Defaults to False.
        **kwargs: See :class:`BaseExporter`.

    Raises:
        ValueError: From :meth:`export` if a fake quant's scheme is not one
            ``TensorRTQuantizer``'s spec declares (unsigned, asymmetric or
            not 8-bit; each one is named).
    """
    backend = 'tensorrt'

    def __init__(self, implicit: bool = False, **kwargs) -> None:
        # Implicit mode strips the Q/DQ pairs and hands TensorRT ranges:
        # a clip would only rename the tensors the ranges are keyed by.
        if implicit:
            kwargs.setdefault('clip_narrow_range', False)
        super().__init__(**kwargs)
        self.implicit = implicit

    def side_files(self, onnx_model: onnx.ModelProto, model: fx.GraphModule,
                   stem: str) -> Dict[str, object]:
        if not self.implicit:
            return {}
        _, pairs = strip_qdq(onnx_model)
        ranges = {}
        for name, scale, _ in pairs:
            # Weights are per channel; TensorRT's implicit mode takes one
            # range per tensor, so the largest is the per-tensor range.
            ranges[name] = float(np.max(scale)) * 127.0
        return {f'{stem}.ranges.json': ranges}

    def final_model(self, onnx_model: onnx.ModelProto) -> onnx.ModelProto:
        onnx_model = super().final_model(onnx_model)
        if not self.implicit:
            return onnx_model
        float_model, _ = strip_qdq(onnx_model)
        onnx.checker.check_model(float_model, full_check=True)
        return float_model
