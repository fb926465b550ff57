"""Exporter for Rockchip's NPU: QDQ ONNX and the ``.rknn`` built from it."""
import os.path as osp
from typing import Optional

import onnx
import torch
from torch import nn

from mmrazor_quant.backends import get_backend
from mmrazor_quant.registry import EXPORTERS
from ..atomic import atomic_outputs
from ..exporters.base import ExportResult
from ..int8_coverage import float_tensor_producers
from ..int32_bias import align_bias_to_int32_grid_
from ..onnxruntime.exporter import ONNXRuntimeExporter
from .simulator import DEFAULT_PLATFORM, RKNN_ENV, build_rknn
from .weight_grid import RKNN_WEIGHT_RANGE, fit_weights_to_rknn_grid_

__all__ = ['RKNNExporter']


@EXPORTERS.register_module()
class RKNNExporter(ONNXRuntimeExporter):
    """QDQ ONNX and the ``.rknn`` rknn-toolkit2 builds from it (our qparams).

    ``<stem>.rknn`` is built with the model's own scales and zero-points.

    The toolkit loads the pre-quantized model (``load_onnx``) and builds it
    without quantizing (``build(do_quantization=False)``): every scale and
    zero-point of the ``.rknn`` is one of the model's; nothing is
    calibrated. It runs in its own venv (``make rknn-env``) through
    :data:`~mmrazor_quant.deploy.rknn.simulator.RKNN_ENV`, which first
    writes the model as the toolkit reads Q/DQ pairs
    (:mod:`~mmrazor_quant.deploy.rknn.toolkit_encoding`); the ``.onnx``
    written here stays the model's own QDQ form. :meth:`prepare_model` puts
    the weights on the integers a ``.rknn`` holds and the biases on the
    int32 grid ``s_in * s_w`` the toolkit rounds them to. The ``.rknn`` is
    built for a batch of one.

    The ONNX, its side files and the ``.rknn`` are written together or not
    at all.

    Args:
        target_platform (str): The chip (``'rk3588'``, ``'rk3568'``, ...).
            Defaults to ``'rk3588'``.
        **kwargs: See :class:`ONNXRuntimeExporter`.

    Raises:
        ValueError: From :meth:`export`, if the model was quantized for
            another target, a fake quant's scheme is not one
            ``RKNNQuantizer``'s spec declares, or an op would run in float
            (named with its layer).
        ToolchainMissing: From :meth:`export`, if ``.venv-rknn`` is not
            built (before anything is written).
    """
    backend = 'rknn'

    def __init__(self, target_platform: str = DEFAULT_PLATFORM,
                 **kwargs) -> None:
        super().__init__(**kwargs)
        self.target_platform = target_platform
        self._rknn_tmp: Optional[str] = None
        self._input_shape = None

    def prepare_model(self, qmodel: nn.Module) -> Optional[str]:
        """Weights in :data:`RKNN_WEIGHT_RANGE` (a ``.rknn`` cannot hold
        ``+127``; see :func:`fit_weights_to_rknn_grid_`), then, unless
        ``float_bias``, the biases on the int32 grid ``s_in * s_w``, also
        behind a ``view`` (the linear head: the toolkit rounds every bias);
        returns what changed."""
        _check_quantizer(qmodel)
        grown = fit_weights_to_rknn_grid_(qmodel)
        low, high = RKNN_WEIGHT_RANGE
        summary = (f'rknn weights: {grown} channel scale(s) grown for the '
                   f'weights to round into [{low}, {high}] (the integers a '
                   '.rknn holds)')
        if not self.float_bias:
            summary += '; ' + align_bias_to_int32_grid_(
                qmodel, through_reshapes=True).format()
        return summary

    def final_model(self, onnx_model: onnx.ModelProto) -> onnx.ModelProto:
        model = super().final_model(onnx_model)
        floats = float_tensor_producers(model)
        if floats:
            found = '\n  '.join(f'{n.op_type} {n.name!r} (layer '
                                f'{_layer(n.name)!r})' for n in floats)
            raise ValueError(
                f'rknn: {len(floats)} op(s) would run in float: their output '
                'reaches another op or the model output without a '
                'QuantizeLinear/DequantizeLinear pair, and the NPU runs a '
                'pre-quantized model in int8 only (RKNNQuantizer quantizes '
                'conv, linear, add, mul, matmul, concat and pooling, not '
                'LayerNorm, GELU or softmax):\n  ' + found)
        return model

    def verify_loads(self, path: str) -> None:
        build_rknn(path, self._input_shape, self.target_platform,
                   rknn_path=self._rknn_tmp)

    def export(self, qmodel: nn.Module, example_input: torch.Tensor,
               onnx_path: str) -> ExportResult:
        _check_quantizer(qmodel)
        RKNN_ENV.python  # a missing toolchain fails before any work
        rknn_path = osp.splitext(onnx_path)[0] + '.rknn'
        self._input_shape = [1] + list(example_input.shape[1:])
        with atomic_outputs([rknn_path]) as (tmp, ):
            self._rknn_tmp = tmp
            try:
                result = super().export(qmodel, example_input, onnx_path)
            finally:
                self._rknn_tmp = None
        result.files['rknn'] = rknn_path
        return result


def _check_quantizer(qmodel: nn.Module) -> None:
    quantizer = getattr(qmodel, 'quantizer', None)
    if quantizer is None or get_backend('rknn').accepts_quantizer(
            quantizer):
        return
    raise ValueError(
        f'rknn cannot deploy a model quantized by {type(quantizer).__name__}'
        f' (backend {quantizer.backend!r}): its placement and schemes are '
        f"{quantizer.backend}'s; quantize it with RKNNQuantizer (e.g. "
        'configs/quantization/ptq/ptq_rknn_resnet18_mnist.py)')


def _layer(node_name: str) -> str:
    """The module an exported node comes from: ``'head_fc'`` for
    ``'/head_fc/Gemm'`` (the node name's scope)."""
    parts = [p for p in node_name.split('/') if p][:-1]
    return '/'.join(parts) or node_name
