"""Quantizer for ncnn's int8 inference."""
from mmrazor_quant.registry import MODELS
from .backend_spec import BackendSpec, TensorSpec
from .base import BaseQuantizer
from .op_kinds import OpKind
from .rules import InputSelector, QuantRules

__all__ = ['NCNNQuantizer']


@MODELS.register_module()
class NCNNQuantizer(BaseQuantizer):
    """Quantize as ncnn runs an int8 model (``int8_scale_term`` layers).

    ncnn runs three layers in int8: ``Convolution``,
    ``ConvolutionDepthWise`` and ``InnerProduct``. Each takes a float32
    blob, quantizes it with its own input scale, sums int8 products in an
    int32 accumulator and dequantizes the sum (``sum / (s_in * s_w) +
    bias``, then the fused activation) back to float32. Every other layer
    (pooling, eltwise add, concat, activations that are not fused) runs in
    float32. So fake quants sit on the **inputs** of conv and linear only;
    residual adds, pooling and the tensors no conv reads stay float.

    Schemes it executes (ncnn's int8 rules, as ``ncnn2table`` and
    ``ncnn2int8`` write them): weights int8 symmetric per output channel on
    ``[-127, 127]``; activations int8 symmetric per tensor on
    ``[-127, 127]`` (no zero-point: ncnn has none, a ReLU output still uses
    the signed grid); 8 bit only; rounding half away from zero (ncnn's
    ``float2int8``).

    ncnn stores a scale as a multiplier, the inverse of this project's
    (``q = round(x * s_ncnn)``); the exporter writes ``1 / s``
    (:mod:`mmrazor_quant.deploy.ncnn`).
    """
    backend = 'ncnn'
    rules = QuantRules(quantized_inputs={
        OpKind.CONV: InputSelector.FIRST,
        OpKind.LINEAR: InputSelector.FIRST,
    })
    scheme = BackendSpec(
        supported_bits=(8, ),
        weight=TensorSpec(
            qdtypes=('qint8', ), symmetric=True, symmetric_range=True,
            per_channel=True, quant_ranges={8: (-127, 127)}),
        activation=TensorSpec(
            qdtypes=('qint8', ), symmetric=True, symmetric_range=True,
            per_channel=False, quant_ranges={8: (-127, 127)}),
        rounding='half_away_from_zero')
    #: ncnn's ``Deconvolution`` has no int8 path, and its writer takes
    #: per-channel weight scales on axis 0 only: a transposed conv keeps
    #: its float weight.
    quantizes_transposed_convs = False
