"""The toy NPU's quantizer: where it quantizes and what it executes."""
from mmrazor_quant.models.quantizers import (
    BackendSpec,
    BaseQuantizer,
    InputSelector,
    OpKind,
    QuantRules,
    TensorSpec,
)
from mmrazor_quant.registry import MODELS

__all__ = ['ToyNPUQuantizer']


@MODELS.register_module()
class ToyNPUQuantizer(BaseQuantizer):
    """A toy NPU: int4 or int8, signed symmetric, narrow range, ties to even.

    The NPU runs conv, linear and eltwise add in integers and reads their
    inputs quantized (input style, as OpenVINO); everything else runs on
    the host in float. Weights are per output channel, activations per
    tensor; both on the symmetric grid ``[-(2^(b-1) - 1), 2^(b-1) - 1]``.
    One backend, two precisions: the config picks ``bit=4`` or ``bit=8``.
    """
    backend = 'toy_npu'
    rules = QuantRules(
        quantized_inputs={
            OpKind.CONV: InputSelector.FIRST,
            OpKind.LINEAR: InputSelector.FIRST,
            OpKind.ADD: InputSelector.ALL,
        })
    scheme = BackendSpec(
        supported_bits=(4, 8),
        weight=TensorSpec(
            qdtypes=('qint8', ), symmetric=True, symmetric_range=True,
            per_channel=True, quant_ranges={4: (-7, 7), 8: (-127, 127)}),
        activation=TensorSpec(
            qdtypes=('qint8', ), symmetric=True, symmetric_range=True,
            per_channel=False, quant_ranges={4: (-7, 7), 8: (-127, 127)}),
        rounding='half_even')
