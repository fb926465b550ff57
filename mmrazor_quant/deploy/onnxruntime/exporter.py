"""Exporter for onnxruntime: standard QDQ ONNX."""
import warnings
from typing import Optional

import onnx
import torch
from torch import nn

from mmrazor_quant.registry import EXPORTERS
from ..exporters.base import BaseExporter, ExportResult
from ..int32_bias import align_bias_to_int32_grid_, bias_grid_offsets
from .passes import drop_clips_inside_grid

__all__ = ['ONNXRuntimeExporter']

#: Offset (in steps of ``s_in * s_w``) above which a bias is off its grid:
#: an aligned bias is off by float rounding only, an unaligned layer's
#: largest offset is near 0.5.
_OFF_GRID = 0.05


@EXPORTERS.register_module()
class ONNXRuntimeExporter(BaseExporter):
    """QDQ ONNX that onnxruntime's CPU provider fuses into int8 kernels.

    For a model that is both fast and exact in onnxruntime, quantize with
    8-bit activations on their full type range (nothing to clip, so every
    Q/DQ pair fuses) and put the biases on the int32 grid the int8 kernels
    use (:func:`~mmrazor_quant.deploy.align_bias_to_int32_grid_`); on CPUs
    without VNNI use 7-bit weights (W7A8, what ``quantize_static(...,
    reduce_range=True)`` does) so that u8 x s8 pairs cannot saturate.

    Grids narrower than their ONNX type (e.g. 7-bit activations) get a clip
    before ``QuantizeLinear``, which keeps them exact but stops the fusion.
    A ``Relu``/``Clip`` right before a ``QuantizeLinear`` whose grid lies
    inside its range is dropped (see :func:`drop_clips_inside_grid`).

    Warns if a bias is off the int32 grid: onnxruntime then rounds it and
    drifts from the simulation.

    Args:
        float_bias (bool): :meth:`prepare_model` leaves the biases off the
            int32 grid (the runtime then drifts from the simulation).
            Defaults to False.
        **kwargs: See :class:`BaseExporter`.
    """
    backend = 'onnxruntime'

    def __init__(self, float_bias: bool = False, **kwargs) -> None:
        super().__init__(**kwargs)
        self.float_bias = float_bias

    def prepare_model(self, qmodel: nn.Module) -> Optional[str]:
        """Put the biases on the int32 grid ``s_in * s_w`` of the int8
        kernels (see :func:`align_bias_to_int32_grid_`), unless
        ``float_bias``; returns the alignment's summary."""
        if self.float_bias:
            return None
        return align_bias_to_int32_grid_(qmodel).format()

    def export(self, qmodel: nn.Module, example_input: torch.Tensor,
               onnx_path: str) -> ExportResult:
        offsets = bias_grid_offsets(qmodel) if hasattr(qmodel,
                                                       'qmodels') else {}
        off_grid = sorted(k for k, v in offsets.items() if v > _OFF_GRID)
        if off_grid:
            warnings.warn(
                f'onnxruntime: {len(off_grid)} of {len(offsets)} biases are '
                'off the int32 grid s_in * s_w its int8 kernels round them '
                'to, so the runtime will drift from the simulation; call '
                'mmrazor_quant.deploy.align_bias_to_int32_grid_(model) '
                'before evaluating and exporting. First: '
                f'{off_grid[:3]}', stacklevel=2)
        return super().export(qmodel, example_input, onnx_path)

    def final_model(self, onnx_model: onnx.ModelProto) -> onnx.ModelProto:
        model = super().final_model(onnx_model)
        if drop_clips_inside_grid(model):
            onnx.checker.check_model(model, full_check=True)
        return model

    def verify_loads(self, path: str) -> None:
        import onnxruntime as ort
        ort.InferenceSession(path, providers=['CPUExecutionProvider'])
