"""Helpers shared by the QAT modules, and the BN-statistics switches that
QAT loops call on a whole model."""
from typing import List

from torch import Tensor, nn

from mmrazor_quant.models.fake_quants.base import BaseFakeQuantize

__all__ = ['freeze_bn_stats', 'update_bn_stats', 'prepare_weight_fake_quant']


def prepare_weight_fake_quant(weight_fake_quant: BaseFakeQuantize,
                              weight: Tensor,
                              ch_axis: int = 0) -> BaseFakeQuantize:
    """Point a weight fake quant's per-channel qparams at the weight's
    output channels (axis ``ch_axis``), size them, and put it on
    ``weight``'s device.

    Per-channel qparams are sized before training so the optimizer (for
    learnable scales) and checkpoints see their final shape. The axis is
    the layer's, whatever the qconfig says: a qconfig is shared by every
    layer and a transposed conv keeps its output channels on axis 1.

    Args:
        weight_fake_quant (BaseFakeQuantize): The fake quant.
        weight (Tensor): The weight it will quantize.
        ch_axis (int): The weight's output-channel axis. Defaults to 0.

    Returns:
        BaseFakeQuantize: ``weight_fake_quant`` itself.

    Raises:
        TypeError: If ``weight_fake_quant`` is not a BaseFakeQuantize.
    """
    if not isinstance(weight_fake_quant, BaseFakeQuantize):
        raise TypeError('weight_fake_quant must be a BaseFakeQuantize, got '
                        f'{type(weight_fake_quant).__name__}')
    if weight_fake_quant.is_per_channel:
        _set_channel_axis(weight_fake_quant, ch_axis)
        weight_fake_quant.init_qparams_shape(weight.shape[ch_axis])
    return weight_fake_quant.to(weight.device)


def _set_channel_axis(weight_fake_quant: BaseFakeQuantize,
                      ch_axis: int) -> None:
    """Make the fake quant and its observer reduce along ``ch_axis``."""
    if weight_fake_quant.ch_axis == ch_axis:
        return
    weight_fake_quant.qscheme = weight_fake_quant.qscheme.replace(
        ch_axis=ch_axis)
    observer = weight_fake_quant.observer
    if observer is not None:
        observer.qscheme = observer.qscheme.replace(ch_axis=ch_axis)


def _fused_bn_modules(model: nn.Module) -> List[nn.Module]:
    # Imported here: the fused modules import this file.
    from .bn_fold import FusedBnMixin
    return [m for m in model.modules() if isinstance(m, FusedBnMixin)]


def freeze_bn_stats(model: nn.Module) -> int:
    """Make every BN-fused QAT module in ``model`` use (and stop updating)
    its BN running statistics: ``y = conv(x, fq(W_fold)) + b_fold``.

    Plain ``nn.BatchNorm*`` modules that were not fused are left alone.
    Call it on the model (it walks all submodules), not via
    ``model.apply``.

    Args:
        model (nn.Module): The prepared model.

    Returns:
        int: How many modules were frozen.
    """
    modules = _fused_bn_modules(model)
    for module in modules:
        module.freeze_bn_stats()
    return len(modules)


def update_bn_stats(model: nn.Module) -> int:
    """Undo :func:`freeze_bn_stats`: BN-fused QAT modules in train mode use
    batch statistics and update their running statistics again.

    Args:
        model (nn.Module): The prepared model.

    Returns:
        int: How many modules were switched.
    """
    modules = _fused_bn_modules(model)
    for module in modules:
        module.update_bn_stats()
    return len(modules)
