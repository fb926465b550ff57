"""TQT fake quantization: a learned log2 threshold, power-of-two scales."""
from typing import Optional, Union

import torch
from torch import Tensor, nn

from mmrazor_quant.models.fake_quants import BaseFakeQuantize
from mmrazor_quant.models.fake_quants.kernels import quantize_learnable
from mmrazor_quant.registry import MODELS
from mmrazor_quant.structures.quantization import QSchema, RoundingPolicy

__all__ = ['TQTFakeQuantize', 'tqt_fake_quantize']


def _pot_scale(log2_t: Tensor, levels: float) -> Tensor:
    """``s = 2^ceil(log2_t) / levels``, differentiated as if without the
    ceil (straight-through): ``ds/dl = s ln2``, TQT's gradient."""
    exponent = log2_t + (torch.ceil(log2_t) - log2_t).detach()
    return torch.exp2(exponent) / levels


def tqt_fake_quantize(x: Tensor, log2_t: Tensor, bit: int, signed: bool,
                      rounding=RoundingPolicy.HALF_EVEN) -> Tensor:
    """``clamp(round(x / s), qmin, qmax) * s`` (TQT's gradients: ``dy/dx``
    1 inside the grid, 0 clipped; ``dy/dl = s ln2 (round(v) - v)`` inside,
    ``s ln2 qmin / qmax`` clipped, ``v = x / s``) with ``s = 2^ceil(log2_t) /
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
    # LSQ's kernel with z = 0: dy/ds = round(v) - v inside, qmin / qmax
    # clipped, times ds/dl = s ln2 is TQT's dy/dl.
    scale = _pot_scale(log2_t, float(levels))
    return quantize_learnable(x, scale, torch.zeros_like(scale), qmin, qmax,
                              None, 1.0, half_away)


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
