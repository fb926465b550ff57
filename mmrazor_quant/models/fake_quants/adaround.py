r"""AdaRound: a weight fake quant whose rounding direction is learned.

Nagel et al., 2020, "Up or Down? Adaptive Rounding for Post-Training
Quantization". With scale :math:`s`, zero-point :math:`z` and a continuous
variable :math:`V` (``alpha``) of the weight's shape:

.. math::

    \tilde W = s \cdot \big(\mathrm{clip}(\lfloor W / s \rfloor + h(V) + z,
    q_{min}, q_{max}) - z\big)

    h(V) = \mathrm{clip}\big(\sigma(V)(\zeta - \gamma) + \gamma, 0, 1\big),
    \quad \zeta = 1.1, \ \gamma = -0.1

(the *rectified sigmoid*). In ``'hard'`` mode :math:`h(V)` becomes the step
:math:`[V \ge 0]`, so each weight sits on the floor or the ceil of
:math:`W / s`. The regulariser that pushes :math:`h` to 0 or 1 is
:func:`rounding_regularizer`.
"""
from typing import Optional, Union

import torch
from torch import Tensor, nn

from mmrazor_quant.registry import MODELS
from mmrazor_quant.structures.quantization import QSchema
from .base import BaseFakeQuantize
from .fake_quantize import FakeQuantize
from .kernels import check_float_input

__all__ = ['AdaRoundFakeQuantize', 'rectified_sigmoid',
           'rounding_regularizer']

ZETA = 1.1
GAMMA = -0.1
_MODES = ('nearest', 'soft', 'hard')


def rectified_sigmoid(alpha: Tensor) -> Tensor:
    r""":math:`h(V) = \mathrm{clip}(\sigma(V)(\zeta - \gamma) + \gamma, 0,
    1)` with :math:`\zeta = 1.1, \gamma = -0.1`."""
    return (torch.sigmoid(alpha) * (ZETA - GAMMA) + GAMMA).clamp(0, 1)


def rounding_regularizer(alpha: Tensor, beta: float) -> Tensor:
    r"""AdaRound's regulariser :math:`\sum_i 1 - |2 h(V_i) - 1|^\beta`.

    Zero when every :math:`h` is 0 or 1; a large :math:`\beta` (20) leaves
    :math:`h` free, a small one (2) pulls it to the nearest end.
    """
    return (1 - (2 * rectified_sigmoid(alpha) - 1).abs().pow(beta)).sum()


@MODELS.register_module()
class AdaRoundFakeQuantize(FakeQuantize):
    r"""Weight fake quant with learned up/down rounding (AdaRound).

    Modes (attribute ``rounding``):

    * ``'nearest'`` (initial): exactly :class:`FakeQuantize`;
    * ``'soft'``: :math:`s(\mathrm{clip}(\lfloor W/s \rfloor + h(V) + z) -
      z)` with the rectified sigmoid, differentiable in ``alpha``;
    * ``'hard'``: the same with :math:`h = [V \ge 0]`: floor or ceil.

    The passes in :mod:`mmrazor_quant.ptq` switch the modes; a model may also
    be built with ``w_fake_quant=dict(type='AdaRoundFakeQuantize')``.

    Args:
        observer (dict | BaseObserver): The observer, or its config.
        qscheme (QSchema | dict, optional): The scheme. Defaults to the
            observer's.

    Example:
        >>> fq = AdaRoundFakeQuantize.from_fake_quant(conv.weight_fake_quant)
        >>> fq.init_alpha(conv.weight)      # h(V) = W/s - floor(W/s)
        >>> fq.rounding = 'soft'            # ... optimise fq.alpha ...
        >>> fq.rounding = 'hard'            # floor or ceil from now on
    """

    def __init__(self,
                 observer: Optional[Union[dict, nn.Module]],
                 qscheme: Optional[Union[QSchema, dict]] = None) -> None:
        super().__init__(observer, qscheme)
        self.rounding = 'nearest'
        self.alpha: Optional[nn.Parameter] = None

    @classmethod
    def from_fake_quant(cls, fake_quant: BaseFakeQuantize
                        ) -> 'AdaRoundFakeQuantize':
        """An AdaRound fake quant with ``fake_quant``'s scheme and its
        qparams in use (learned ones included), observer off.

        The observer module is shared, not copied.

        Raises:
            RuntimeError: If ``fake_quant`` was never calibrated.
        """
        scale, zero_point = fake_quant.get_qparams()
        new = cls(fake_quant.observer, fake_quant.qscheme)
        new.name = fake_quant.name
        new._set_qparams(scale, zero_point)
        new.disable_observer()
        return new.to(scale.device)

    def _grid(self, x: Tensor):
        """``scale`` and ``zero_point`` broadcastable over ``x``."""
        self._check_initialized()
        if not self.is_per_channel:
            return self.scale, self.zero_point.to(x.dtype)
        shape = [1] * x.dim()
        shape[self.ch_axis % x.dim()] = -1
        return (self.scale.reshape(shape),
                self.zero_point.to(x.dtype).reshape(shape))

    @torch.no_grad()
    def init_alpha(self, weight: Tensor) -> nn.Parameter:
        r"""Start :math:`V` where :math:`h(V) = W/s - \lfloor W/s \rfloor`
        (the soft weight equals the float one inside the grid):
        :math:`V = -\log((\zeta - \gamma) / (r - \gamma) - 1)`.

        Args:
            weight (Tensor): The (BN-folded) weight this module quantizes.

        Returns:
            nn.Parameter: ``alpha``, of ``weight``'s shape.
        """
        scale, _ = self._grid(weight)
        scaled = weight / scale
        rest = scaled - scaled.floor()
        alpha = -torch.log((ZETA - GAMMA) / (rest - GAMMA) - 1)
        self.alpha = nn.Parameter(alpha.clone())
        return self.alpha

    def rounding_offset(self) -> Tensor:
        """``h(V)`` in soft mode, ``[V >= 0]`` in hard mode."""
        if self.rounding == 'hard':
            return (self.alpha >= 0).to(self.alpha.dtype)
        return rectified_sigmoid(self.alpha)

    def drop_alpha(self) -> None:
        """Back to nearest rounding (after the weight was baked)."""
        self.alpha = None
        self.rounding = 'nearest'

    def forward(self, x: Tensor) -> Tensor:
        """Nearest, soft or hard rounding of ``x`` (see the class)."""
        if self.rounding not in _MODES:
            raise ValueError(f'{self.name}: rounding must be one of '
                             f'{_MODES}, got {self.rounding!r}')
        if self.rounding == 'nearest' or self.alpha is None:
            return super().forward(x)
        if self.observer_on:
            self.observe(x)
        if not self.fake_quant_on:
            return x
        check_float_input(x, self.name)
        # float32 arithmetic for any input dtype (AMP), output in x's dtype.
        weight = x.detach().float()
        scale, zero_point = self._grid(weight)
        floor = torch.floor(weight / scale)
        q = (floor + self.rounding_offset() + zero_point).clamp(
            self.quant_min, self.quant_max)
        return ((q - zero_point) * scale).to(x.dtype)

    def extra_repr(self) -> str:
        return f'{super().extra_repr()}, rounding={self.rounding}'
