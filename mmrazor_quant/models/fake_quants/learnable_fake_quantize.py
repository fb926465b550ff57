"""LSQ / LSQ+: fake quantization with a learned scale (and zero-point)."""
import math
from typing import Optional, Union

import torch
from torch import Tensor, nn

from mmrazor_quant.compat.fake_quant_api import LearnableAPIMixin
from mmrazor_quant.registry import MODELS
from mmrazor_quant.structures.quantization import QSchema, RoundingPolicy
from .base import BaseFakeQuantize
from .functional import _normalize_axis
from .kernels import check_float_input, quantize_learnable

__all__ = ['LearnableFakeQuantize', 'LSQPlusFakeQuantize']

_EPS = torch.finfo(torch.float32).eps


@MODELS.register_module(name=['LearnableFakeQuantize', 'LSQFakeQuantize'])
class LearnableFakeQuantize(LearnableAPIMixin, BaseFakeQuantize):
    """Learned Step Size Quantization (LSQ, Esser et al., 2020) and, with a
    trainable zero-point, LSQ+ (Bhalgat et al., 2020).

    ``scale`` is an ``nn.Parameter``; ``zero_point`` is a float32
    parameter if ``zero_point_trainable`` else a float32 buffer. While
    ``observer_enabled``, each forward copies the observer's qparams into
    them (the static initial estimate; the LSQ loop does this on the first
    batch, then disables observers and learns). While
    ``fake_quant_enabled``, the output is
    :func:`~.functional.fake_quantize_learnable` with gradients::

        dy/ds = g * (round(x/s) - x/s)          inside the grid
                g * (quant_min - z) or g * (quant_max - z)   clipped
        dy/dz = g * (0 inside, -s clipped)      (LSQ+ only)

    where ``g = 1 / sqrt(N * quant_max)`` with ``N`` the number of elements
    (per channel: elements per channel) if ``use_grad_scaling`` else 1.

    MMRazor's switches (``enable_param_learning``, ``enable_static_estimate``,
    ``enable_val``, ``toggle_qparam_learning``, ...) are available, see
    :class:`~mmrazor_quant.compat.fake_quant_api.LearnableAPIMixin`.

    The scale used in ``forward`` is ``max(scale, eps)``, with the gradient
    passed straight through so a scale pushed below ``eps`` can recover.

    Args:
        observer (dict | BaseObserver): The observer, or its config.
        qscheme (QSchema | dict, optional): The scheme. Defaults to the
            observer's.
        use_grad_scaling (bool): Scale the qparam gradients by ``g``.
            Defaults to True.
        zero_point_trainable (bool): Learn the zero-point (LSQ+).
            Defaults to False.
        eps (float): Smallest scale used in forward. Defaults to float32
            epsilon.

    Raises:
        ValueError: If ``eps`` is not positive.
        RuntimeError: In ``forward``, if fake quantization is enabled but
            the module was never calibrated and its observer is disabled.
    """

    def __init__(self,
                 observer: Union[dict, nn.Module],
                 qscheme: Optional[Union[QSchema, dict]] = None,
                 use_grad_scaling: bool = True,
                 zero_point_trainable: bool = False,
                 eps: float = _EPS) -> None:
        super().__init__(observer, qscheme)
        if not eps > 0:
            raise ValueError(f'{type(self).__name__}: eps must be > 0, got '
                             f'{eps!r}')
        self.use_grad_scaling = use_grad_scaling
        self.zero_point_trainable = zero_point_trainable
        self.eps = eps
        self.scale = nn.Parameter(self._new_qparam(1.0, torch.float32))
        zero_point = self._new_qparam(self._default_zero_point, torch.float32)
        if zero_point_trainable:
            self.zero_point = nn.Parameter(zero_point)
        else:
            self.register_buffer('zero_point', zero_point)

    def grad_factor(self, x: Tensor) -> float:
        """LSQ's ``g = 1 / sqrt(N * quant_max)`` for input ``x`` (1.0 without
        gradient scaling); ``N`` counts elements per channel per-channel.
        """
        if not self.use_grad_scaling:
            return 1.0
        numel = x.numel()
        if self.is_per_channel:
            numel //= max(x.shape[self.ch_axis], 1)
        return 1.0 / math.sqrt(max(numel, 1) * max(self.quant_max, 1))

    def positive_scale(self) -> Tensor:
        """``max(scale, eps)`` with a straight-through gradient."""
        scale = self.scale
        return scale + (scale.clamp(min=self.eps) - scale).detach()

    def _current_qparams(self):
        return self.positive_scale(), self.zero_point

    def observe(self, x: Tensor) -> None:
        """Record ``x`` and take the observer's qparams as the estimate."""
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
        check_float_input(x, self.name)
        axis = None
        if self.is_per_channel:
            axis = _normalize_axis(x, self.ch_axis, self.scale.numel())
        return quantize_learnable(
            x, self.positive_scale(), self.zero_point, self.quant_min,
            self.quant_max, axis, self.grad_factor(x),
            self.qscheme.rounding is RoundingPolicy.HALF_AWAY_FROM_ZERO)

    def extra_repr(self) -> str:
        return (f'{super().extra_repr()}, '
                f'use_grad_scaling={self.use_grad_scaling}, '
                f'zero_point_trainable={self.zero_point_trainable}')


@MODELS.register_module()
class LSQPlusFakeQuantize(LearnableFakeQuantize):
    """LSQ+: :class:`LearnableFakeQuantize` with ``zero_point_trainable``
    defaulting to True.

    Args:
        observer (dict | BaseObserver): The observer, or its config.
        qscheme (QSchema | dict, optional): The scheme. Defaults to the
            observer's.
        use_grad_scaling (bool): Defaults to True.
        zero_point_trainable (bool): Defaults to True.
        eps (float): Defaults to float32 epsilon.
    """

    def __init__(self,
                 observer: Union[dict, nn.Module],
                 qscheme: Optional[Union[QSchema, dict]] = None,
                 use_grad_scaling: bool = True,
                 zero_point_trainable: bool = True,
                 eps: float = _EPS) -> None:
        super().__init__(observer, qscheme, use_grad_scaling,
                         zero_point_trainable, eps)
