"""The toy NPU's deploy format: QDQ ONNX plus a table of scales."""
from typing import Dict

import onnx
from torch import fx

from mmrazor_quant.deploy import ONNXRuntimeExporter
from mmrazor_quant.models.fake_quants import BaseFakeQuantize
from mmrazor_quant.registry import EXPORTERS

__all__ = ['ToyNPUExporter', 'scale_table']


def scale_table(model: fx.GraphModule) -> Dict[str, dict]:
    """One row per fake quant of a deploy model: what the NPU compiler
    needs to program it (bits, integer range, rounding, scales, axis)."""
    table = {}
    for name, fq in model.named_modules():
        if not isinstance(fq, BaseFakeQuantize):
            continue
        scale, zero_point = fq.get_qparams()
        table[name] = dict(
            bit=fq.qscheme.bit,
            quant_min=fq.quant_min,
            quant_max=fq.quant_max,
            rounding=fq.qscheme.rounding.value,
            axis=fq.ch_axis if fq.is_per_channel else None,
            scale=scale.reshape(-1).tolist(),
            zero_point=zero_point.reshape(-1).tolist())
    return table


@EXPORTERS.register_module()
class ToyNPUExporter(ONNXRuntimeExporter):
    """QDQ ONNX (checked by onnxruntime) and ``<stem>.npu_scales.json``.

    The table maps each fake quant of the deploy model (same names as in
    the quantized model's tensor graph) to its bits, range, rounding and
    scales; the NPU's zero-points are all 0. A model whose fake quants are
    not the scheme :class:`ToyNPUQuantizer` declares (e.g. asymmetric) is
    refused before anything is written: the export checks them against
    that ``BackendSpec``.
    """
    backend = 'toy_npu'

    def side_files(self, onnx_model: onnx.ModelProto, model: fx.GraphModule,
                   stem: str) -> Dict[str, object]:
        return {f'{stem}.npu_scales.json': scale_table(model)}
