r"""QDrop: randomly drop activation quantization.

Wei et al., 2022, "QDrop: Randomly Dropping Quantization for Extremely
Low-bit Post-Training Quantization". Each element keeps its float value
with probability :math:`p` and is fake-quantized otherwise:

.. math::

    y = \begin{cases} x & u < p \\ \mathrm{fq}(x) & u \ge p \end{cases},
    \qquad u \sim \mathcal{U}[0, 1)

:math:`p = 0` is plain fake quantization, :math:`p = 1` no activation
quantization at all.
"""
from typing import Optional, Union

import torch
from torch import Tensor, nn

from mmrazor_quant.registry import MODELS
from mmrazor_quant.structures.quantization import QSchema
from .fake_quantize import FakeQuantize

__all__ = ['QDropFakeQuantize', 'drop_quantization']


def drop_quantization(x: Tensor,
                      x_quant: Tensor,
                      drop_prob: float,
                      generator: Optional[torch.Generator] = None) -> Tensor:
    """``where(u < drop_prob, x, x_quant)`` with ``u`` uniform in [0, 1).

    Args:
        x (Tensor): The float tensor.
        x_quant (Tensor): Its fake-quantized value.
        drop_prob (float): Probability to keep an element float.
        generator (torch.Generator, optional): Source of ``u`` (for
            determinism). Defaults to None (torch's global generator).

    Returns:
        Tensor: The mixture; gradients flow to the branch each element took.
    """
    # Drawn where the generator lives (the default one: x's device), in
    # float32 so that u < p is the same test for every input dtype.
    device = generator.device if generator is not None else x.device
    u = torch.rand(x.shape, generator=generator, device=device)
    return torch.where(u.to(x.device) < drop_prob, x, x_quant)


@MODELS.register_module()
class QDropFakeQuantize(FakeQuantize):
    """Activation fake quant that drops quantization in train mode.

    In ``eval`` mode (PTQ, deploy) it is :class:`FakeQuantize`; in ``train``
    mode each element stays float with probability ``drop_prob``. The PTQ
    pass :func:`mmrazor_quant.ptq.qdrop` applies the same rule to any
    activation fake quant, so this class is only needed for QAT-style use.

    Args:
        observer (dict | BaseObserver): The observer, or its config.
        qscheme (QSchema | dict, optional): The scheme. Defaults to the
            observer's.
        drop_prob (float): The probability ``p``. Defaults to 0.5.

    Raises:
        ValueError: If ``drop_prob`` is not in [0, 1].
    """

    def __init__(self,
                 observer: Union[dict, nn.Module],
                 qscheme: Optional[Union[QSchema, dict]] = None,
                 drop_prob: float = 0.5) -> None:
        super().__init__(observer, qscheme)
        if not 0.0 <= float(drop_prob) <= 1.0:
            raise ValueError(f'drop_prob must be in [0, 1], got {drop_prob}')
        self.drop_prob = float(drop_prob)
        self.generator: Optional[torch.Generator] = None

    def forward(self, x: Tensor) -> Tensor:
        out = super().forward(x)
        if not self.training or not self.fake_quant_on \
                or self.drop_prob == 0:
            return out
        return drop_quantization(x, out, self.drop_prob, self.generator)

    def extra_repr(self) -> str:
        return f'{super().extra_repr()}, drop_prob={self.drop_prob}'
