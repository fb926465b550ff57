"""Keep a quantized model's weights on the integers a ``.rknn`` can hold.

rknn-toolkit2 re-quantizes int8 weights with the scale ``128 s / 127`` it
derives from a zero-point-0 pair (see
:mod:`~mmrazor_quant.deploy.rknn.toolkit_encoding`): whatever the QDQ
model holds, its weights end up in ``[-127, 126]`` steps of that scale. The
exporter writes them so that the toolkit lands on our scale ``s`` and our
integers, which works for every integer but ``+127`` (and ``-128`` for a
full-range scheme). :func:`fit_weights_to_rknn_grid_` grows the scale of
each channel that has such a weight just enough for its weights to round
into the range (by less than 0.5 %), in the model itself, so that the
simulation computes what the NPU runs. The weights are rounded once, from
the float weights.
"""
import torch
from torch import nn

from mmrazor_quant.models.qat_modules import is_qat_module
from mmrazor_quant.models.utils import tensor_graph_module

__all__ = ['fit_weights_to_rknn_grid_', 'RKNN_WEIGHT_RANGE']

#: The weight integers a ``.rknn`` holds (on our scale).
RKNN_WEIGHT_RANGE = (-127, 126)
#: How far inside the range's ends a grown scale puts the largest weights
#: (in steps): they round to the ends, with float32 to spare.
_MARGIN = 0.49


@torch.no_grad()
def fit_weights_to_rknn_grid_(qmodel: nn.Module) -> int:
    """Grow the weight scale of each channel whose weights round outside
    :data:`RKNN_WEIGHT_RANGE`, in place, so that they round inside it.

    The channel's new scale puts its largest positive weight at
    ``126.49`` steps (its most negative one at ``-127.49``). Call it on
    the final model (calibrated or trained, observers disabled), before
    evaluating and exporting it, and before putting the biases on the grid
    ``s_in * s_w``.

    Args:
        qmodel (nn.Module): The quantized model (or its tensor-mode
            GraphModule).

    Returns:
        int: How many channels' scales grew.
    """
    low, high = RKNN_WEIGHT_RANGE
    grown = 0
    for module in tensor_graph_module(qmodel).modules():
        if not is_qat_module(module):
            continue
        fq = module.weight_fake_quant
        folded = module.get_folded_weight_bias()[0]
        per_channel = folded.transpose(0, fq.ch_axis).reshape(
            folded.shape[fq.ch_axis], -1)
        if not fq.is_per_channel:
            per_channel = per_channel.reshape(1, -1)
        scale = fq.scale.detach().reshape(-1)
        zero_point = fq.get_qparams()[1].reshape(-1).float()
        needed = torch.maximum(
            per_channel.amax(1) / (high - zero_point + _MARGIN),
            per_channel.amin(1) / (low - zero_point - _MARGIN))
        grow = needed > scale
        if grow.any():
            fq.scale.copy_(
                torch.where(grow, needed, scale).reshape(fq.scale.shape))
            grown += int(grow.sum())
    return grown
