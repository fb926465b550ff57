r"""Batch-norm folding during QAT (Krishnamoorthi 2018, sec. 3.2).

With BN running statistics :math:`\mu, \sigma^2`, affine
:math:`\gamma, \beta`, and :math:`s = \gamma / \sqrt{\sigma^2 + \epsilon}`
(one per output channel), an inference engine runs the folded layer

.. math::

    W_{fold} = s \cdot W, \qquad b_{fold} = \beta + s \, (b - \mu)

so QAT must fake-quantize :math:`W_{fold}`, not :math:`W`. A fused module
computes, with ``op`` the conv or linear:

* BN statistics not frozen, train mode (one ``op`` per step):

  .. math::

      y = \mathrm{BN}\big(\mathrm{op}(x, \mathrm{fq}(W_{fold})) / s + b\big)
        = \mathrm{BN}\big(\mathrm{op}(x, \mathrm{fq}(W_{fold}) / s) + b\big)

  where ``BN`` uses the batch statistics and updates the running ones
  (with fake quant disabled this equals ``BN(op(x, W) + b)``). The second
  form (``op`` is linear in its weight), used here, applies :math:`1/s` to
  the weight instead of the activation, so a step costs one ``op`` and no
  extra activation-sized passes; gradients reach :math:`\gamma` through
  :math:`W_{fold}`, :math:`1/s` and the BN, as in the first form;
* BN statistics frozen (:meth:`FusedBnMixin.freeze_bn_stats`), or eval mode:

  .. math::

      y = \mathrm{op}(x, \mathrm{fq}(W_{fold})) + b_{fold}

  exactly what the deployed integer model computes; nothing is updated.
"""
from typing import ClassVar, Optional, Tuple

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from mmrazor_quant.models.fake_quants.base import BaseFakeQuantize

__all__ = ['FusedBnMixin']


class FusedBnMixin:
    """Turns a QAT conv/linear class into its BN-fused variant.

    Mixed in before a QAT class that provides ``_wrap_float``,
    ``_apply_weight`` and ``to_float`` (e.g. ``class ConvBn2d(FusedBnMixin,
    QATConv2d)``). The fused module keeps the float layer's ``weight`` /
    ``bias`` and owns the float BN module as ``bn`` (so its parameters and
    buffers checkpoint under ``<name>.bn.*``).

    Attributes:
        bn (nn.modules.batchnorm._BatchNorm): The folded BN.
        bn_frozen (bool): Whether BN statistics are frozen.
    """

    #: The BN class this module folds.
    _bn_cls: ClassVar[type] = nn.BatchNorm2d

    bn: nn.Module
    bn_frozen: bool

    @classmethod
    def from_float(cls, layer: nn.Module, bn: nn.Module,
                   weight_fake_quant: BaseFakeQuantize) -> nn.Module:
        """Fuse a float conv/linear and the BN that follows it.

        The parameters of ``layer`` and the ``bn`` module itself are shared,
        not copied.

        Args:
            layer (nn.Module): The float conv / linear.
            bn (nn.Module): The BN applied to its output, of ``cls._bn_cls``,
                tracking running statistics.
            weight_fake_quant (BaseFakeQuantize): Fake quant of the folded
                weight.

        Returns:
            The fused module, in ``layer``'s train/eval mode, not frozen.

        Raises:
            TypeError: If ``layer`` or ``bn`` has the wrong type.
            ValueError: If ``bn`` does not track running statistics (there
                is nothing to fold) or its size does not match ``layer``.
        """
        if type(bn) is not cls._bn_cls:
            raise TypeError(f'{cls.__name__}.from_float expects a '
                            f'{cls._bn_cls.__name__}, got {type(bn).__name__}')
        if bn.running_var is None:
            raise ValueError(f'{cls.__name__}: cannot fold a BN built with '
                             'track_running_stats=False')
        if bn.num_features != layer.weight.shape[0]:
            raise ValueError(f'{cls.__name__}: BN has {bn.num_features} '
                             f'features but the layer has '
                             f'{layer.weight.shape[0]} output channels')
        fused = cls._wrap_float(layer, weight_fake_quant)
        fused.bn = bn
        fused.bn_frozen = False
        return fused

    # -- BN statistics switches ------------------------------------------
    def freeze_bn_stats(self) -> nn.Module:
        """Use BN running statistics from now on and stop updating them."""
        self.bn_frozen = True
        return self

    def update_bn_stats(self) -> nn.Module:
        """Use batch statistics in train mode and update running ones."""
        self.bn_frozen = False
        return self

    # -- folding math ----------------------------------------------------
    def _bn_scale_shift(self) -> Tuple[Tensor, Tensor]:
        """``s = gamma / sqrt(running_var + eps)`` and ``b_fold``."""
        bn = self.bn
        scale = torch.rsqrt(bn.running_var + bn.eps)
        if bn.weight is not None:
            scale = bn.weight * scale
        bias = -bn.running_mean if self.bias is None \
            else self.bias - bn.running_mean
        shift = scale * bias
        if bn.bias is not None:
            shift = shift + bn.bias
        return scale, shift

    def _weight_view(self, scale: Tensor) -> Tensor:
        """``scale`` broadcastable over the weight's output channels."""
        return scale.reshape([-1] + [1] * (self.weight.dim() - 1))

    def get_folded_weight_bias(self) -> Tuple[Tensor, Optional[Tensor]]:
        r"""``(W_fold, b_fold)`` from the BN running statistics (detached).

        .. math::

            W_{fold} = \frac{\gamma}{\sqrt{\sigma^2 + \epsilon}} W, \quad
            b_{fold} = \beta + \frac{\gamma}{\sqrt{\sigma^2 + \epsilon}}
            (b - \mu)
        """
        with torch.no_grad():
            scale, shift = self._bn_scale_shift()
            return self.weight * self._weight_view(scale), shift

    def forward(self, x: Tensor) -> Tensor:
        """See the module docstring for the two regimes."""
        scale, shift = self._bn_scale_shift()
        weight = self.weight_fake_quant(self.weight * self._weight_view(scale))
        if self.bn_frozen or not self.training:
            out = self._apply_weight(x, weight, shift)
        else:
            # op(x, fq(W_fold)) / s == op(x, fq(W_fold) / s) per output
            # channel, as op is linear in its weight: scaling the weight
            # instead of the output keeps the step at one conv with no extra
            # activation-sized passes (forward or backward). A channel with
            # gamma == 0 has a zero folded weight; scaling it by 1 keeps it
            # 0 instead of 0 * inf (BN then outputs beta, as the float model).
            inv_scale = torch.where(scale == 0, torch.ones_like(scale),
                                    scale).reciprocal()
            out = self._apply_weight(x, weight * self._weight_view(inv_scale),
                                     self.bias)
            out = self._batch_norm_train(out)
        return F.relu(out) if self._with_relu else out

    def _batch_norm_train(self, out: Tensor) -> Tensor:
        """``self.bn(out)`` in train mode, the same values, with the running
        statistics replaced instead of updated in place.

        ``scale`` above was computed from ``running_var``; under
        ``torch.compile`` AOTAutograd may recompute it in the backward from
        the buffer, which an in-place update has changed by then (wrong
        weight gradients, seen with torch 2.13 when a ReLU follows). Compiled,
        the update runs on copies (ATen's own arithmetic) that then become
        the buffers; eagerly BN updates its buffers in place as usual (DDP's
        buffer broadcast holds on to them).
        """
        bn = self.bn
        # momentum=None (cumulative average) keeps BN's own bookkeeping.
        if not torch.compiler.is_compiling() or bn.momentum is None:
            return bn(out)
        running_mean = bn.running_mean.clone()
        running_var = bn.running_var.clone()
        out = F.batch_norm(out, running_mean, running_var, bn.weight, bn.bias,
                           True, bn.momentum, bn.eps)
        bn.running_mean, bn.running_var = running_mean, running_var
        bn.num_batches_tracked = bn.num_batches_tracked + 1
        return out

    def extra_repr(self) -> str:
        return f'{super().extra_repr()}, bn_frozen={self.bn_frozen}'
