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
       buffers and ``initialized`` becomes 1 (for an observer that searches
       its statistics, e.g. a histogram's, while fake quantization is off:
       once, when the qparams are next needed — fake quantization or the
       observer switched, :meth:`sync_qparams`, ``is_initialized``,
       ``get_qparams`` or ``state_dict``);
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
        if self.observer.defers_qparams and not self.fake_quant_on:
            self._qparams_stale = True
            return
        self._take_observer_qparams()

    def _take_observer_qparams(self) -> None:
        self._qparams_stale = False
        scale, zero_point = self.calculate_qparams()
        self._set_qparams(scale, zero_point)

    def sync_qparams(self) -> None:
        """Compute the qparams an observer deferred (see the class
        docstring); a no-op when they are current."""
        if self.__dict__.get('_qparams_stale'):
            self._take_observer_qparams()

    def forward(self, x: Tensor) -> Tensor:
        """Observe (if enabled) and fake-quantize (if enabled) ``x``."""
        if self.observer_on:
            self.observe(x)
        if not self.fake_quant_on:
            return x
        self.sync_qparams()
        self._check_initialized()
        return self.quantize(x)

    # Every way the qparams can be read or start being used takes the
    # deferred ones first.
    def _set_flag(self, name: str, value: bool) -> None:
        self.sync_qparams()
        super()._set_flag(name, value)

    @property
    def is_initialized(self) -> bool:
        self.sync_qparams()
        return super().is_initialized

    def get_qparams(self):
        self.sync_qparams()
        return super().get_qparams()

    def _save_to_state_dict(self, destination, prefix, keep_vars):
        self.sync_qparams()
        super()._save_to_state_dict(destination, prefix, keep_vars)

    def _load_from_state_dict(self, *args, **kwargs) -> None:
        super()._load_from_state_dict(*args, **kwargs)
        self._qparams_stale = False  # the checkpoint's qparams replace them

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
