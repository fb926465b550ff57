"""TQT fake quantization: a learned log2 threshold, power-of-two scales."""
import math
from typing import Optional, Union

import torch
from torch import Tensor, nn

from mmrazor_quant.models.fake_quants import BaseFakeQuantize
from mmrazor_quant.models.fake_quants import round_half_away_from_zero
from mmrazor_quant.registry import MODELS
from mmrazor_quant.structures.quantization import QSchema, RoundingPolicy

__all__ = ['TQTFakeQuantize', 'tqt_fake_quantize']


class _TQTFunction(torch.autograd.Function):
    """Forward and the TQT gradients (``v = x / s``, ``s = 2^ceil(l) / L``)::

        y       = clamp(round(v), qmin, qmax) * s
        dy/dx   = 1 inside the grid, 0 clipped
        dy/dl   = s ln2 (round(v) - v) inside, s ln2 qmin / qmax clipped
    """

    @staticmethod
    def forward(ctx, x, log2_t, levels, quant_min, quant_max, half_away):
        scale = torch.exp2(torch.ceil(log2_t)) / levels
        v = x / scale
        r = round_half_away_from_zero(v) if half_away else torch.round(v)
        q = r.clamp(quant_min, quant_max)
        ctx.save_for_backward(v, r, scale)
        ctx.quant_range = (quant_min, quant_max)
        return q * scale

    @staticmethod
    def backward(ctx, grad):
        v, r, scale = ctx.saved_tensors
        quant_min, quant_max = ctx.quant_range
        below, above = r < quant_min, r > quant_max
        inside = ~(below | above)
        d_log2 = torch.where(
            below, torch.full_like(v, quant_min),
            torch.where(above, torch.full_like(v, quant_max), r - v))
        grad_l = (grad * d_log2).sum() * scale * math.log(2.0)
        return grad * inside, grad_l.reshape(()), None, None, None, None


def tqt_fake_quantize(x: Tensor, log2_t: Tensor, bit: int, signed: bool,
                      rounding=RoundingPolicy.HALF_EVEN) -> Tensor:
    """``clamp(round(x / s), qmin, qmax) * s`` with ``s = 2^ceil(log2_t) /
    2^(b-1)`` (signed, ``[qmin, qmax] = [-2^(b-1), 2^(b-1) - 1]``) or
    ``2^ceil(log2_t) / 2^b`` (unsigned, ``[0, 2^b - 1]``).

    Args:
        x (Tensor): Input.
        log2_t (Tensor): 0-d log2 threshold (learnable).
        bit (int): Bit width.
        signed (bool): Signed grid.
        rounding (str | RoundingPolicy): Tie rounding. Defaults to
            half to even.

    Returns:
        Tensor: The fake-quantized ``x``.
    """
    if signed:
        levels, qmin, qmax = 2**(bit - 1), -2**(bit - 1), 2**(bit - 1) - 1
    else:
        levels, qmin, qmax = 2**bit, 0, 2**bit - 1
    half_away = RoundingPolicy(rounding) is RoundingPolicy.HALF_AWAY_FROM_ZERO
    return _TQTFunction.apply(x, log2_t, float(levels), qmin, qmax,
                              half_away)


@MODELS.register_module()
class TQTFakeQuantize(BaseFakeQuantize):
    """Trained Quantization Thresholds (Jain et al., MLSys 2020).

    The parameter ``log2_t`` is the log2 of the clipping threshold; the
    scale is the power of two ``2^ceil(log2_t) / 2^(b-1)`` (signed) and the
    zero-point 0. While ``observer_enabled``, ``log2_t`` is set from the
    observer's scale (``log2(scale * 2^(b-1))``); afterwards it is learned
    with the gradient of :func:`tqt_fake_quantize`. Per-tensor, symmetric
    schemes whose range is the full ``[-2^(b-1), 2^(b-1) - 1]`` (or
    ``[0, 2^b - 1]``).

    Args:
        observer (dict | BaseObserver): The observer, or its config.
        qscheme (QSchema | dict, optional): Defaults to the observer's.

    Raises:
        ValueError: If the scheme is per-channel or has a symmetric range.
    """
    _qparam_names = ('log2_t', )

    def __init__(self,
                 observer: Union[dict, nn.Module],
                 qscheme: Optional[Union[QSchema, dict]] = None) -> None:
        super().__init__(observer, qscheme)
        if self.is_per_channel or self.qscheme.is_symmetric_range:
            raise ValueError(f'{type(self).__name__} needs a per-tensor '
                             'scheme with the full range '
                             '(is_symmetric_range=False)')
        self.log2_t = nn.Parameter(torch.zeros(()))

    @property
    def levels(self) -> int:
        bit = self.qscheme.bit
        return 2**(bit - 1) if self.qscheme.is_signed else 2**bit

    def _current_qparams(self):
        scale = torch.exp2(torch.ceil(self.log2_t.detach())) / self.levels
        return scale, torch.zeros((), dtype=torch.int32)

    def forward(self, x: Tensor) -> Tensor:
        if self.observer_enabled[0]:
            self.observer(x.detach())
            scale, _ = self.calculate_qparams()
            self.log2_t.data.copy_(torch.log2(scale * self.levels))
            self.initialized.fill_(1)
        if not self.fake_quant_enabled[0]:
            return x
        self._check_initialized()
        return tqt_fake_quantize(x, self.log2_t, self.qscheme.bit,
                                 self.qscheme.is_signed,
                                 self.qscheme.rounding)
