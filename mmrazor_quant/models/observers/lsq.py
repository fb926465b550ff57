"""Initial scales for learned step size quantization (LSQ and LSQ+)."""
import math
from typing import Optional, Tuple

import torch
from torch import Tensor

from mmrazor_quant.compat.torch_style import resolve_qscheme
from mmrazor_quant.registry import MODELS
from mmrazor_quant.structures.quantization import QSchema, calculate_qparams
from mmrazor_quant.structures.quantization.qparams import pot_scale
from .minmax import MinMaxObserver

__all__ = [
    'LSQObserver', 'LSQPerChannelObserver', 'LSQPlusObserver',
    'LSQPlusPerChannelObserver'
]

_EPS = torch.finfo(torch.float32).eps


class _MomentObserver(MinMaxObserver):
    """Min/max plus running sums of ``x ** k`` (float64) and the count.

    Sums and count are all-reduced (``SUM``) in one call per batch, so the
    moments every rank holds are those of the union of all batches.
    """
    #: Names of the sums ``sum(f_k(x))`` kept, in order.
    moments: Tuple[str, ...] = ()

    reads_order_free = False  # sums

    def __init__(self, qscheme: Optional[QSchema] = None) -> None:
        super().__init__(qscheme)
        for name in self.moments:
            self._register_stat(name, 0., torch.float64)
        self._register_stat('count', 0., torch.float64, channel_shaped=False)

    def _batch_moments(self, x: Tensor) -> Tuple[Tensor, ...]:
        raise NotImplementedError

    def _observe(self, x: Tensor) -> None:
        x = self._prepare(x)
        self._observe_min_max(x)  # also rejects NaN/inf on every rank
        sums = [s.reshape(-1) for s in self._batch_moments(x)]
        count = torch.tensor([x.shape[-1]], dtype=torch.float64,
                             device=x.device)
        packed = self._all_reduce(torch.cat(sums + [count]), 'sum')
        parts = packed[:-1].split(sums[0].numel())
        for name, part in zip(self.moments, parts):
            stat = getattr(self, name)
            setattr(self, name, stat + part.reshape(self.min_val.shape))
        self.count = self.count + packed[-1]

    def _mean(self, name: str) -> Tensor:
        return getattr(self, name) / self.count


@MODELS.register_module()
class LSQObserver(_MomentObserver):
    """The LSQ initial step size (Esser et al., 2020).

    ``scale = 2 * mean(|x|) / sqrt(Qp)`` with ``Qp = quant_max`` and the
    mean over every value observed (per channel for the per-channel
    variant: over all dims but ``ch_axis``). The zero-point follows the
    scheme:

    * signed symmetric: ``0``;
    * unsigned, all data ``>= 0``: ``quant_min``;
    * otherwise (asymmetric, or unsigned data with negatives): the
      zero-point of ``calculate_qparams(min_val, max_val, qscheme)``.

    ``scale`` is clamped below by float32 eps and, for ``is_pot_scale``,
    rounded up to a power of two.

    Args:
        qscheme (QSchema | torch.qscheme, optional): The scheme. Defaults to
            ``QSchema()``.
        **torch_kwargs: MMRazor's torch-style keys instead of a QSchema
            (``dtype``, ``qscheme=torch.per_tensor_affine``, ``quant_min``,
            ``quant_max``, ``reduce_range``, ``ch_axis``), see
            :mod:`mmrazor_quant.compat.torch_style`.
    """
    moments = ('abs_sum', )

    def __init__(self, qscheme: Optional[QSchema] = None,
                 **torch_kwargs) -> None:
        super().__init__(resolve_qscheme(type(self), qscheme, torch_kwargs))

    def _batch_moments(self, x: Tensor) -> Tuple[Tensor, ...]:
        return (x.abs().sum(-1, dtype=torch.float64), )

    def calculate_qparams(self) -> Tuple[Tensor, Tensor]:
        """LSQ scale and the scheme's zero-point.

        Raises:
            ValueError: If nothing was observed.
        """
        self._require_observed()
        qs = self.qscheme
        scale = (2 * self._mean('abs_sum') / math.sqrt(qs.quant_max)).float()
        scale = torch.clamp(scale, min=_EPS)
        if qs.is_pot_scale:
            scale = pot_scale(scale)
        if qs.is_symmetry and qs.is_signed:
            zero_point = torch.zeros_like(scale, dtype=torch.int32)
        else:
            _, zero_point = calculate_qparams(self.min_val, self.max_val, qs)
            if not qs.is_signed:
                zero_point = torch.where(self.min_val >= 0,
                                         torch.full_like(zero_point,
                                                         qs.quant_min),
                                         zero_point)
        return scale, zero_point


@MODELS.register_module()
class LSQPerChannelObserver(LSQObserver):
    """:class:`LSQObserver` with one scale per slice along ``ch_axis``.

    Args:
        qscheme (QSchema, optional): A per-channel scheme. Defaults to
            ``QSchema(is_per_channel=True)``.
    """
    per_channel = True


@MODELS.register_module()
class LSQPlusObserver(_MomentObserver):
    """The LSQ+ initial range (Bhalgat et al., 2020).

    With ``mu``/``sigma`` the mean/standard deviation of every value
    observed:

    ``lo = max(min_val, mu - k sigma)``, ``hi = min(max_val, mu + k sigma)``

    and the qparams are ``calculate_qparams(lo, hi, qscheme)``.

    Args:
        qscheme (QSchema, optional): The scheme. Defaults to ``QSchema()``.
        k (float): Width in standard deviations, > 0. Defaults to 3.0.

    Raises:
        ValueError: If ``k <= 0``.
    """
    moments = ('x_sum', 'sq_sum')

    def __init__(self,
                 qscheme: Optional[QSchema] = None,
                 k: float = 3.0) -> None:
        super().__init__(qscheme)
        if not k > 0:
            raise ValueError(f'{type(self).__name__}: k must be > 0, got '
                             f'{k!r}')
        self.k = float(k)

    def _batch_moments(self, x: Tensor) -> Tuple[Tensor, ...]:
        return (x.sum(-1, dtype=torch.float64),
                (x * x).sum(-1, dtype=torch.float64))

    def calculate_qparams(self) -> Tuple[Tensor, Tensor]:
        """qparams of ``[max(min, mu - k sigma), min(max, mu + k sigma)]``.

        Raises:
            ValueError: If nothing was observed.
        """
        self._require_observed()
        mean = self._mean('x_sum')
        std = (self._mean('sq_sum') - mean * mean).clamp_min(0).sqrt()
        lo = torch.maximum(self.min_val, (mean - self.k * std).float())
        hi = torch.minimum(self.max_val, (mean + self.k * std).float())
        return calculate_qparams(lo, hi, self.qscheme)

    def extra_repr(self) -> str:
        return f'{super().extra_repr()}, k={self.k}'


@MODELS.register_module()
class LSQPlusPerChannelObserver(LSQPlusObserver):
    """:class:`LSQPlusObserver` with one range per slice along ``ch_axis``.

    Args:
        qscheme (QSchema, optional): A per-channel scheme. Defaults to
            ``QSchema(is_per_channel=True)``.
        k (float): Width in standard deviations. Defaults to 3.0.
    """
    per_channel = True
