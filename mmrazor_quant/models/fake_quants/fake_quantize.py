"""The classic fake quant: qparams from an observer, fixed between batches."""
from typing import Optional, Union

import torch
from torch import Tensor, nn

from mmrazor_quant.registry import MODELS
from mmrazor_quant.structures.quantization import QSchema, RoundingPolicy
from .base import BaseFakeQuantize
from .functional import _normalize_axis
from .kernels import check_float_input, quantize_fixed

__all__ = ['FakeQuantize']


@MODELS.register_module()
class FakeQuantize(BaseFakeQuantize):
    """Fake quantization with qparams computed by an observer.

    ``forward(x)``:

    1. if ``observer_enabled``: the observer records ``x``, its
       ``calculate_qparams()`` is copied into the ``scale`` / ``zero_point``
       buffers and ``initialized`` becomes 1;
    2. if ``fake_quant_enabled``: returns
       ``(clamp(round(x / s) + z, quant_min, quant_max) - z) * s`` with the
       scheme's rounding (straight-through gradient for ``x``);
       otherwise returns ``x``.

    Buffers: ``scale`` (float32) and ``zero_point`` (int32), 0-d per-tensor,
    1-d along ``qscheme.ch_axis`` per-channel.

    Args:
        observer (dict | BaseObserver): The observer, or its config.
        qscheme (QSchema | dict, optional): The scheme. Defaults to the
            observer's.

    Raises:
        RuntimeError: In ``forward``, if fake quantization is enabled but
            the module was never calibrated and its observer is disabled.

    Example:
        >>> fq = FakeQuantize(observer=dict(type='MinMaxObserver'))
        >>> y = fq(torch.randn(8, 3))   # calibrates, then fake-quantizes
        >>> fq.disable_observer()       # qparams are frozen from now on
    """

    def __init__(self,
                 observer: Union[dict, nn.Module],
                 qscheme: Optional[Union[QSchema, dict]] = None) -> None:
        super().__init__(observer, qscheme)
        self.register_buffer('scale', self._new_qparam(1.0, torch.float32))
        self.register_buffer(
            'zero_point',
            self._new_qparam(self._default_zero_point, torch.int32))

    def observe(self, x: Tensor) -> None:
        """Record ``x`` and take the observer's qparams (no gradient)."""
        self.observer(x.detach())
        scale, zero_point = self.calculate_qparams()
        self._set_qparams(scale, zero_point)

    def forward(self, x: Tensor) -> Tensor:
        """Observe (if enabled) and fake-quantize (if enabled) ``x``."""
        if self.observer_on:
            self.observe(x)
        if not self.fake_quant_on:
            return x
        self._check_initialized()
        return self.quantize(x)

    def quantize(self, x: Tensor) -> Tensor:
        """Fake-quantize ``x`` with the current ``scale`` / ``zero_point``
        (any float dtype; the kernel is chosen per device and dtype).

        Raises:
            TypeError: If ``x`` is not a float tensor, naming the module.
        """
        check_float_input(x, self.name)
        axis = None
        if self.is_per_channel:
            axis = _normalize_axis(x, self.ch_axis, self.scale.numel())
        return quantize_fixed(
            x, self.scale, self.zero_point, self.quant_min, self.quant_max,
            axis, self.qscheme.rounding is RoundingPolicy.HALF_AWAY_FROM_ZERO)
