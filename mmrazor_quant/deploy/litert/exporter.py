"""Exporter for LiteRT: the QDQ ONNX and the int8 ``.tflite`` converted
from it, with the same scales and zero-points."""
import os.path as osp
from typing import Dict, Optional, Sequence

import onnx
import torch
from torch import fx, nn

from mmrazor_quant.backends import get_backend
from mmrazor_quant.models.quantizers.litert_int8_matmul import (
    remove_int8_matmul_simulation,
)
from mmrazor_quant.registry import EXPORTERS
from ..atomic import atomic_outputs
from ..dead_code import remove_dead_code
from ..exporters.base import ExportResult, quantized_tensors
from ..onnxruntime.exporter import ONNXRuntimeExporter
from .onnx_to_tflite import convert_qdq_onnx
from .runtime import load_interpreter, tflite_path_of

__all__ = ['LiteRTExporter']


@EXPORTERS.register_module()
class LiteRTExporter(ONNXRuntimeExporter):
    """Write ``<stem>.onnx`` (QDQ, static batch 1), ``<stem>.qparams.json``
    and ``<stem>.tflite``: the full-integer int8 TFLite model that ONNX
    converts into (see :func:`~mmrazor_quant.deploy.litert.convert_qdq_onnx`),
    checked to load in LiteRT's interpreter before anything is written.

    The biases go on the int32 grid ``s_in * s_w`` of TFLite's int8 kernels
    first (:meth:`prepare_model`, as for onnxruntime).

    Args:
        float_ops (Sequence[str]): ONNX ops run in float32 between
            DEQUANTIZE and QUANTIZE. Defaults to ``('LayerNormalization',)``
            (LiteRT has no int8 LayerNorm); ``()`` refuses any float op;
            adding ``'MatMul'`` runs the attention matmuls (two
            activations) in float instead of the int8 BATCH_MATMUL (the
            deploy model, the parity check's simulation, then multiplies
            in float too instead of simulating BATCH_MATMUL's integer
            requantization).
        **kwargs: See :class:`ONNXRuntimeExporter`; ``dynamic_batch``
            defaults to False (the ``.tflite`` has batch 1).
    """
    backend = 'litert'

    def __init__(self, float_ops: Sequence[str] = ('LayerNormalization', ),
                 **kwargs) -> None:
        kwargs.setdefault('dynamic_batch', False)
        super().__init__(**kwargs)
        self.float_ops = tuple(float_ops)
        self._layers: Dict[str, str] = {}
        self._tflite: Optional[bytes] = None
        self._tflite_tmp: Optional[str] = None

    def check_quantizer(self, qmodel: nn.Module) -> None:
        """Raise ValueError if ``qmodel`` was quantized for another
        deploy target (its placement and schemes are that target's)."""
        quantizer = getattr(qmodel, 'quantizer', None)
        if quantizer is None or get_backend(
                self.backend).accepts_quantizer(quantizer):
            return
        raise ValueError(
            f'LiteRT: the model was quantized by {type(quantizer).__name__} '
            f'(backend {quantizer.backend!r}), whose placement and schemes '
            'are that target\'s; quantize it with LiteRTQuantizer (the '
            'TFLite int8 spec) to export it to LiteRT')

    def prepare_model(self, qmodel: nn.Module) -> Optional[str]:
        self.check_quantizer(qmodel)
        return super().prepare_model(qmodel)

    def check_model(self, model: fx.GraphModule) -> None:
        if 'MatMul' in self.float_ops:
            # the .tflite multiplies in float32: so does the simulation
            remove_int8_matmul_simulation(model)
        # names of the fake quants, for the .tflite tensors and messages
        self._layers = {
            f'{name}.scale': module.name or name
            for name, module in model.named_modules()
            if module in quantized_tensors(model)
        }

    def final_model(self, onnx_model: onnx.ModelProto) -> onnx.ModelProto:
        """The ONNX model; converts it to the ``.tflite`` first, so an op
        LiteRT cannot run fails the export before any file is written."""
        model = super().final_model(onnx_model)
        live = onnx.ModelProto.FromString(model.SerializeToString())
        remove_dead_code(live)
        graph = convert_qdq_onnx(
            live, self.float_ops,
            layer_name=lambda scale: self._layers.get(scale, scale))
        self._tflite = graph.serialize('mmrazor_quant LiteRTExporter')
        return model

    def verify_loads(self, path: str) -> None:
        with open(self._tflite_tmp, 'wb') as f:
            f.write(self._tflite)
        load_interpreter(self._tflite_tmp)

    def export(self, qmodel: nn.Module, example_input: torch.Tensor,
               onnx_path: str) -> ExportResult:
        """Export ``qmodel`` on one sample of ``example_input`` (the
        ``.tflite`` has batch 1); see :meth:`BaseExporter.export`."""
        tflite_path = tflite_path_of(onnx_path)
        if osp.abspath(tflite_path) == osp.abspath(onnx_path):
            raise ValueError(f'LiteRT: give the .onnx path to export to '
                             f'(the .tflite goes beside it), got '
                             f'{onnx_path!r}')
        self.check_quantizer(qmodel)
        with atomic_outputs([tflite_path]) as (tmp, ):
            self._tflite_tmp = tmp
            result = super().export(qmodel, example_input[:1], onnx_path)
        result.files['tflite'] = tflite_path
        return result
