"""Quantizer for OpenVINO's CPU plugin (the NNCF placement)."""
from typing import Optional, Tuple

from torch import fx, nn

from mmrazor_quant.registry import MODELS
from mmrazor_quant.structures.quantization import QConfigHandler
from .backend_spec import UP_TO_8_BITS, BackendSpec, TensorSpec
from .base import BaseQuantizer
from .op_kinds import OpKind, is_depthwise_conv
from .rules import InputSelector, QuantRules

__all__ = ['OpenVINOQuantizer']

_MODEL_TYPES = ('cnn', 'transformer')


@MODELS.register_module()
class OpenVINOQuantizer(BaseQuantizer):
    """Quantize as OpenVINO executes an int8 model with FakeQuantize ops.

    OpenVINO runs an op in int8 when its **inputs** carry a FakeQuantize, so
    fake quants sit on inputs and outputs stay float:

    * the data input of conv and linear (after a preceding ReLU, since the
      ReLU is fused into the producing conv);
    * both inputs of matmul (attention's ``Q @ K^T``) and, with
      ``model_type='cnn'``, of attention's ``attn @ V``;
    * with ``model_type='cnn'``: both inputs of eltwise mul, the input of
      average pooling, and the inputs of a residual add except the output
      of the conv/linear that only the add reads: the plugin fuses the add
      into that conv as a sum post-op (one int8 kernel), which adds its
      float output; a fake quant there would keep its clamp but lose its
      rounding;
    * an add or mul by a constant (a scale-shift, ``x * s + b``) quantizes
      nothing: the plugin runs it as a post-op of the op before it, as
      NNCF's patterns say;
    * LayerNorm, GELU and softmax run in float; max pooling, ReLU, concat
      and shape ops (reshape, permute, roll, slicing) are
      quantization-agnostic;
    * a fake quant goes before max pooling and shape ops when nothing else
      reads their input (values are the same: both commute with a
      per-tensor grid), so they run in u8 and the fake quant fuses into the
      producer (a global pooling's reduce, the stem's conv); before the
      split of attention's qkv tensor, q and k (and v where quantized)
      share one fake quant and the gathers run in int8, as NNCF places it.

    ``model_type='transformer'`` follows NNCF's ``ModelType.TRANSFORMER``:
    residual adds, multiplies and average pooling stay float, and so does
    ``attn @ V`` (NNCF's multi-head-attention-output pattern), which keeps
    the residual stream and the attention probabilities out of int8.

    One fake quant per tensor is shared by all consumers that quantize it.
    Schemes it executes: weights signed symmetric (per-channel in practice),
    activations symmetric or asymmetric, at most 8 bit; rounding half to
    even.

    With asymmetric activations and ``depthwise_symmetric_tolerance=t``,
    the input of a depthwise conv takes a grid without a zero-point where
    the calibration data allow it: its histogram observer
    (``symmetric_tolerance``, :class:`~mmrazor_quant.models.observers.
    HistogramObserver`) takes the signed grid (written as int8) or the
    unsigned one from 0 when that grid's histogram MSE is at most
    ``1 + t`` times the asymmetric grid's. The plugin runs a conv whose
    input has a zero-point as a u8 kernel with a source zero-point
    (oneDNN's ``attr-zero-points:src0``), compensated on every call, which
    costs a depthwise conv the most (docs/onnx_models.md, "Latency in
    OpenVINO"). The other inputs (pointwise convs, adds, multiplies,
    matmuls) keep the asymmetric grid.

    Args:
        model_type (str): ``'cnn'`` or ``'transformer'`` (NNCF's
            ``model_type``). Defaults to ``'cnn'``.
        depthwise_symmetric_tolerance (float, optional): The relative
            error a depthwise conv's input may take on for a grid without
            a zero-point, with an asymmetric activation qscheme and a
            histogram MSE activation observer (see above). Defaults to
            None (no such choice); the defaults for models trained
            elsewhere (:func:`~mmrazor_quant.frontends.defaults.
            default_quantizer`) set it with asymmetric activations.
        **kwargs: See :class:`BaseQuantizer`.

    Raises:
        ValueError: If ``model_type`` is not one of the two.
    """
    backend = 'openvino'
    rules = QuantRules(
        quantized_inputs={
            OpKind.CONV: InputSelector.FIRST,
            OpKind.LINEAR: InputSelector.FIRST,
            OpKind.MATMUL: InputSelector.ALL,
            OpKind.ATTN_MATMUL: InputSelector.ALL,
            OpKind.ADD: InputSelector.SUM,
            OpKind.MUL: InputSelector.ALL,
            OpKind.AVGPOOL: InputSelector.FIRST,
        },
        quantize_before=frozenset({OpKind.MAXPOOL, OpKind.SHAPE}),
        scale_shifts_unquantized=True)
    #: The placement of NNCF's ``ModelType.TRANSFORMER``.
    transformer_rules = QuantRules(
        quantized_inputs={
            OpKind.CONV: InputSelector.FIRST,
            OpKind.LINEAR: InputSelector.FIRST,
            OpKind.MATMUL: InputSelector.ALL,
        },
        quantize_before=frozenset({OpKind.MAXPOOL, OpKind.SHAPE}),
        scale_shifts_unquantized=True)
    scheme = BackendSpec(
        supported_bits=UP_TO_8_BITS,
        weight=TensorSpec(qdtypes=('qint8', ), symmetric=True),
        activation=TensorSpec(per_channel=False),
        rounding='half_even')

    def __init__(self, *args, model_type: str = 'cnn',
                 depthwise_symmetric_tolerance: Optional[float] = None,
                 **kwargs) -> None:
        if model_type not in _MODEL_TYPES:
            raise ValueError(f'OpenVINOQuantizer.model_type must be one of '
                             f'{_MODEL_TYPES}, got {model_type!r}')
        super().__init__(*args, **kwargs)
        self.model_type = model_type
        self.depthwise_symmetric_tolerance = depthwise_symmetric_tolerance
        if model_type == 'transformer':
            self.rules = self.transformer_rules

    def _activation_fake_quant(self, key: str, consumer: Optional[fx.Node],
                               consumer_name: Optional[str]
                               ) -> Optional[Tuple[nn.Module, str]]:
        """The consumer's activation fake quant; a depthwise conv's with
        ``depthwise_symmetric_tolerance`` given to its observer as
        ``symmetric_tolerance`` (tagged ``<rule>.depthwise``, its own
        fake quant when another consumer reads the tensor too)."""
        made = super()._activation_fake_quant(key, consumer, consumer_name)
        module = self._modules_cache.get(consumer_name) \
            if consumer_name else None
        if made is None or self.depthwise_symmetric_tolerance is None or \
                not is_depthwise_conv(module):
            return made
        qconfig, tag = self.qconfig_for(consumer_name, module)
        if qconfig.a_qscheme.is_symmetry:
            return made
        observer = dict(qconfig.cfg['a_observer'],
                        symmetric_tolerance=self.depthwise_symmetric_tolerance)
        handler = QConfigHandler(dict(qconfig.cfg, a_observer=observer))
        return handler.build_activation_fake_quant(), f'{tag}.depthwise'
