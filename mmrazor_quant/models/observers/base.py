"""The interface every observer implements."""
from typing import ClassVar, Optional, Tuple

import torch
import torch.distributed as dist
from torch import Tensor, nn

from mmrazor_quant.structures.quantization import QSchema

__all__ = ['BaseObserver']


class BaseObserver(nn.Module):
    """Records statistics of the tensors it sees and turns them into qparams.

    An observer is an identity in ``forward``; ``calculate_qparams`` returns
    ``(scale, zero_point)`` consistent with its :class:`QSchema` (0-d tensors
    per-tensor, 1-d along ``qscheme.ch_axis`` per-channel). Statistics are
    buffers registered in ``__init__`` so they are checkpointed; per-channel
    buffers start empty and take their size from the first tensor (or from a
    loaded state dict), never from a hard-coded shape.

    Subclasses implement ``_observe(x)`` and ``calculate_qparams()``. Under an
    initialised ``torch.distributed`` group they all-reduce their per-batch
    statistics (:meth:`_all_reduce`) so every rank ends with the same qparams.

    Args:
        qscheme (QSchema, optional): The scheme. Defaults to ``QSchema()``
            (or its per-channel form for a per-channel observer).

    Raises:
        ValueError: If a per-channel observer receives a per-tensor scheme or
            the reverse.
    """
    #: Whether this observer computes one scale per channel.
    per_channel: ClassVar[bool] = False
    #: Tracers keep this module as one ``call_module`` node.
    is_fx_leaf = True

    def __init__(self, qscheme: Optional[QSchema] = None) -> None:
        super().__init__()
        if qscheme is None:
            qscheme = QSchema(is_per_channel=self.per_channel)
        elif isinstance(qscheme, dict):
            qscheme = QSchema.from_dict(qscheme)
        if qscheme.is_per_channel is None:
            qscheme = qscheme.replace(is_per_channel=self.per_channel)
        if bool(qscheme.is_per_channel) != self.per_channel:
            kind = 'per-channel' if self.per_channel else 'per-tensor'
            raise ValueError(
                f'{type(self).__name__} is a {kind} observer but its qscheme '
                f'has is_per_channel={qscheme.is_per_channel}')
        self.qscheme = qscheme
        #: Where this observer sits (set by the quantizer), for messages.
        self.name = type(self).__name__

    @property
    def quant_min(self) -> int:
        return self.qscheme.quant_min

    @property
    def quant_max(self) -> int:
        return self.qscheme.quant_max

    @property
    def ch_axis(self) -> int:
        return self.qscheme.ch_axis

    def forward(self, x: Tensor) -> Tensor:
        """Record ``x`` and return it unchanged."""
        if x.numel() == 0:
            raise ValueError(f'{self.name}: cannot observe an empty tensor')
        self._observe(x.detach())
        return x

    def _observe(self, x: Tensor) -> None:
        raise NotImplementedError

    def calculate_qparams(self) -> Tuple[Tensor, Tensor]:
        raise NotImplementedError

    @property
    def has_observed(self) -> bool:
        """Whether any data has been recorded (``calculate_qparams`` works)."""
        raise NotImplementedError

    def _check_finite(self, *stats: Tensor) -> None:
        """Raise a clear error if a reduced statistic is NaN or inf."""
        for stat in stats:
            if not torch.isfinite(stat).all():
                raise ValueError(
                    f'{self.name}: observed NaN or inf values; check the '
                    'float model and its input data (e.g. a division by '
                    'zero) before quantizing')

    @staticmethod
    def _all_reduce(tensor: Tensor, op: str = 'sum') -> Tensor:
        """All-reduce ``tensor`` in place across ranks; no-op if not running
        distributed. ``op`` is ``'sum'``, ``'min'``, ``'max'`` or ``'mean'``.
        """
        if not (dist.is_available() and dist.is_initialized()) or \
                dist.get_world_size() == 1:
            return tensor
        reduce_op = {
            'sum': dist.ReduceOp.SUM,
            'mean': dist.ReduceOp.SUM,
            'min': dist.ReduceOp.MIN,
            'max': dist.ReduceOp.MAX
        }[op]
        dist.all_reduce(tensor, op=reduce_op)
        if op == 'mean':
            tensor.div_(dist.get_world_size())
        return tensor

    def extra_repr(self) -> str:
        qs = self.qscheme
        return (f'qdtype={qs.qdtype}, bit={qs.bit}, '
                f'quant_range={qs.quant_range}, symmetric={qs.is_symmetry}, '
                f'granularity={qs.granularity}')
