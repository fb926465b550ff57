"""PACT: a learned clipping level for unsigned activations."""
from typing import Optional, Tuple, Union

import torch
from torch import Tensor, nn

from mmrazor_quant.registry import MODELS
from mmrazor_quant.structures.quantization import QSchema, RoundingPolicy
from .base import BaseFakeQuantize
from .kernels import check_float_input, quantize_pact

__all__ = ['PACTFakeQuantize']

_EPS = torch.finfo(torch.float32).eps


@MODELS.register_module()
class PACTFakeQuantize(BaseFakeQuantize):
    """PACT (Choi et al., 2018): quantize ``clip(x, 0, alpha)`` with a
    learned clipping level ``alpha``.

    ``y = (clamp(round(c / s) + qmin, qmin, qmax) - qmin) * s`` with
    ``c = clip(x, 0, alpha)`` and ``s = alpha / (qmax - qmin)``; the paper's
    straight-through gradients are ``dy/dalpha = 1`` where ``x >= alpha``
    (else 0) and ``dy/dx = 1`` where ``0 <= x < alpha`` (else 0). An
    L2 penalty on ``alpha``, as in the paper, is the optimizer's weight
    decay.

    Initialisation: with ``init_alpha`` a number, ``alpha`` starts there and
    the module counts as calibrated; the observer (if enabled) only records
    statistics. With ``init_alpha=None``, ``alpha`` is copied from the
    observer while ``observer_enabled`` as the largest representable value
    ``(qmax - z) * s`` of its qparams (the LSQ-loop convention: first batch,
    then observers off).

    ``alpha`` is kept positive: ``max(alpha, eps)`` is used, with the
    gradient passed straight through.

    Args:
        observer (dict | BaseObserver): The observer, or its config.
        qscheme (QSchema | dict, optional): An unsigned per-tensor scheme.
            Defaults to the observer's.
        init_alpha (float, optional): Initial clipping level; ``None`` to
            take it from the observer. Defaults to 10.0.
        eps (float): Smallest ``alpha``. Defaults to float32 epsilon.

    Raises:
        ValueError: If the scheme is signed or per-channel, or
            ``init_alpha`` is not positive.
    """

    _qparam_names: Tuple[str, ...] = ('alpha', )

    def __init__(self,
                 observer: Union[dict, nn.Module],
                 qscheme: Optional[Union[QSchema, dict]] = None,
                 init_alpha: Optional[float] = 10.0,
                 eps: float = _EPS) -> None:
        super().__init__(observer, qscheme)
        if self.qscheme.is_signed:
            raise ValueError(
                f'{type(self).__name__} clips to [0, alpha] and needs an '
                f"unsigned scheme (qdtype='quint8'), got qdtype="
                f'{self.qscheme.qdtype!r}')
        if self.is_per_channel:
            raise ValueError(f'{type(self).__name__} has one alpha per '
                             'tensor and needs a per-tensor scheme')
        if init_alpha is not None and not init_alpha > 0:
            raise ValueError(f'{type(self).__name__}: init_alpha must be > 0 '
                             f'or None, got {init_alpha!r}')
        self.eps = eps
        self.init_from_observer = init_alpha is None
        self.alpha = nn.Parameter(
            torch.tensor(1.0 if init_alpha is None else float(init_alpha)))
        if not self.init_from_observer:
            self._set_flag('initialized', True)

    def positive_alpha(self) -> Tensor:
        """``max(alpha, eps)`` with a straight-through gradient."""
        alpha = self.alpha
        return alpha + (alpha.clamp(min=self.eps) - alpha).detach()

    def _current_qparams(self) -> Tuple[Tensor, Tensor]:
        scale = self.positive_alpha() / (self.quant_max - self.quant_min)
        return scale, torch.tensor(self.quant_min, dtype=torch.int32)

    def observe(self, x: Tensor) -> None:
        """Record ``x``; with ``init_alpha=None`` also take ``alpha``."""
        self.observer(x.detach())
        if not self.init_from_observer:
            return
        scale, zero_point = self.calculate_qparams()
        alpha = (self.quant_max - zero_point.float()) * scale
        # .data: see BaseFakeQuantize._set_qparams.
        self.alpha.data.copy_(alpha.reshape(()))
        self._set_flag('initialized', True)

    def forward(self, x: Tensor) -> Tensor:
        """Observe (if enabled) and fake-quantize (if enabled) ``x``."""
        if self.observer_on:
            self.observe(x)
        if not self.fake_quant_on:
            return x
        self._check_initialized()
        check_float_input(x, self.name)
        return quantize_pact(
            x, self.positive_alpha(), self.quant_min, self.quant_max,
            self.qscheme.rounding is RoundingPolicy.HALF_AWAY_FROM_ZERO)

    def extra_repr(self) -> str:
        return (f'{super().extra_repr()}, '
                f'init_from_observer={self.init_from_observer}')
