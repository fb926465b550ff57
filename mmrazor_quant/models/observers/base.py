"""The interface every observer implements."""
import math
from typing import ClassVar, Dict, Optional, Tuple

import torch
import torch.distributed as dist
from torch import Tensor, nn

from mmrazor_quant.compat.torch_style import WithArgsMixin
from mmrazor_quant.structures.quantization import QSchema
from mmrazor_quant.utils.tensor_checks import check_all

__all__ = ['BaseObserver', 'flat_in_memory_order']


def _is_distributed() -> bool:
    """Whether an initialised process group has more than one rank."""
    return (dist.is_available() and dist.is_initialized()
            and dist.get_world_size() > 1)


def flat_in_memory_order(x: Tensor) -> Tensor:
    """All of ``x`` as one dimension, in the order its values lie in
    memory: a view of any dense layout (a conv's channels-last output
    included, which ``reshape(-1)`` would copy), else a row-major copy."""
    if x.is_contiguous():
        return x.view(-1)
    order = sorted(range(x.dim()), key=lambda d: -x.stride(d))
    dense = x.permute(order)
    return dense.view(-1) if dense.is_contiguous() else x.reshape(-1)


class BaseObserver(WithArgsMixin, nn.Module):
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

    ``Cls.with_args(**kwargs)`` returns a factory, as in MMRazor; it also
    takes torch-style keys (``dtype``, ``qscheme=torch.per_tensor_affine``,
    ``quant_min``, ...; see :mod:`mmrazor_quant.compat.torch_style`).

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
    #: What ``QConfigHandler`` accepts as ``*_observer`` (see its ROLES).
    quant_role: ClassVar[str] = 'observer'
    #: ``calculate_qparams`` depends only on the accumulated statistics and
    #: searches them (histograms): while nothing uses the qparams (fake
    #: quantization off, as in calibration), ``FakeQuantize`` computes them
    #: once, when they are next needed, instead of after every batch.
    defers_qparams: ClassVar[bool] = False
    #: Per-tensor statistics exact in any order of the values (extremes,
    #: histogram counts): a batch is read in the order it lies in memory
    #: (:func:`flat_in_memory_order`), so a conv's channels-last output is
    #: not copied. Sums (MSE, LSQ moments) round by order: off.
    reads_order_free: ClassVar[bool] = False

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
        # name -> (fill value, dtype, channel-shaped) of each statistic.
        self._stat_specs: Dict[str, Tuple[float, torch.dtype, bool]] = {}

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
        observed = x.detach()
        if observed.dtype in (torch.float16, torch.bfloat16):
            # AMP: statistics in float32, the same as of ``x.float()``
            observed = observed.float()
        self._observe(observed)
        return x

    def _observe(self, x: Tensor) -> None:
        raise NotImplementedError

    def calculate_qparams(self) -> Tuple[Tensor, Tensor]:
        raise NotImplementedError

    @property
    def has_observed(self) -> bool:
        """Whether any data has been recorded (``calculate_qparams`` works)."""
        raise NotImplementedError

    # -- helpers for subclasses ------------------------------------------
    def _register_stat(self,
                       name: str,
                       fill: float,
                       dtype: torch.dtype = torch.float32,
                       channel_shaped: Optional[bool] = None) -> None:
        """Register a statistic buffer that :meth:`reset` refills.

        Channel-shaped statistics of a per-channel observer start empty
        (shape ``[0]``) and are sized by :meth:`_ensure_channels` on the
        first batch, or by a loaded state dict; the others are 0-d.

        Args:
            name (str): Buffer name.
            fill (float): Initial value (e.g. ``inf`` for a running min).
            dtype (torch.dtype): Buffer dtype. Defaults to float32.
            channel_shaped (bool, optional): Whether the buffer has one entry
                per channel. Defaults to ``self.per_channel``.
        """
        if channel_shaped is None:
            channel_shaped = self.per_channel
        self._stat_specs[name] = (fill, dtype, channel_shaped)
        self.register_buffer(name, self._initial_stat(name))

    def _initial_stat(self, name: str) -> Tensor:
        fill, dtype, channel_shaped = self._stat_specs[name]
        if channel_shaped:
            return torch.empty(0, dtype=dtype)
        return torch.tensor(fill, dtype=dtype)

    def reset(self) -> None:
        """Forget everything observed (per-channel buffers become empty)."""
        for name in self._stat_specs:
            device = getattr(self, name).device
            setattr(self, name, self._initial_stat(name).to(device))

    def _channel_view(self, x: Tensor) -> Tensor:
        """``x`` as float32, flattened to ``[N]`` per-tensor or to
        ``[C, N]`` (``ch_axis`` moved first) per-channel, so that every
        statistic is one reduction over ``dim=-1``.

        Raises:
            ValueError: If ``ch_axis`` does not exist in ``x``.
        """
        x = x.float()
        if not self.per_channel:
            return flat_in_memory_order(x) if self.reads_order_free \
                else x.reshape(-1)
        axis = self.ch_axis
        if not -x.dim() <= axis < x.dim():
            raise ValueError(
                f'{self.name}: qscheme.ch_axis={axis} is out of range for an '
                f'input of shape {tuple(x.shape)}')
        return x.movedim(axis, 0).reshape(x.shape[axis], -1)

    def _ensure_channels(self, num_channels: int) -> None:
        """Size empty channel-shaped statistics on the first batch.

        Raises:
            ValueError: If the channel count differs from the one observed
                (or loaded) before.
        """
        for name, (fill, dtype, channel_shaped) in self._stat_specs.items():
            if not channel_shaped:
                continue
            buf = getattr(self, name)
            if buf.numel() == 0:
                setattr(self, name,
                        torch.full((num_channels, ), fill, dtype=dtype,
                                   device=buf.device))
            elif buf.shape[0] != num_channels:
                raise ValueError(
                    f'{self.name}: expected {buf.shape[0]} channels along '
                    f'ch_axis={self.ch_axis}, got {num_channels}')

    def _load_from_state_dict(self, state_dict, prefix, local_metadata,
                              strict, missing_keys, unexpected_keys,
                              error_msgs) -> None:
        # Per-channel statistics take their size from the checkpoint, so a
        # fresh (empty) observer can load a calibrated one.
        for name, (_, dtype, channel_shaped) in self._stat_specs.items():
            key = prefix + name
            if channel_shaped and key in state_dict:
                buf = getattr(self, name)
                if buf.shape != state_dict[key].shape:
                    setattr(self, name,
                            torch.empty_like(state_dict[key], dtype=dtype,
                                             device=buf.device))
        super()._load_from_state_dict(state_dict, prefix, local_metadata,
                                      strict, missing_keys, unexpected_keys,
                                      error_msgs)

    def _reduce_min_max(self, min_val: Tensor,
                        max_val: Tensor) -> Tuple[Tensor, Tensor]:
        """All-reduce a batch's min/max across ranks and check them.

        One ``MAX`` all-reduce of ``[-min, max]`` does both. A NaN becomes
        ``+inf`` first, so a bad value on any rank makes every rank raise
        the same error instead of leaving the others waiting.

        Raises:
            ValueError: If any rank saw NaN or inf.
        """
        if not _is_distributed():
            # Alone: the same checks and values without the packing.
            self._check_finite(min_val, max_val)
            return min_val.float(), max_val.float()
        both = torch.stack([-min_val, max_val]).float()
        both = torch.where(torch.isnan(both), torch.full_like(both, math.inf),
                           both)
        self._all_reduce(both, 'max')
        self._check_finite(both)
        return -both[0], both[1]

    def _require_observed(self) -> None:
        """Raise unless :attr:`has_observed`."""
        if torch.compiler.is_compiling():
            # has_observed reads tensors on the host; compiled, the qparams
            # math asserts finite, ordered statistics inside the graph.
            return
        if not self.has_observed:
            raise ValueError(
                f'{self.name}: no data observed yet; run calibration (a '
                'forward pass with the observer enabled) before '
                'calculate_qparams()')

    def _check_finite(self, *stats: Tensor) -> None:
        """Raise a clear error if a reduced statistic is NaN or inf."""
        for stat in stats:
            check_all(
                torch.isfinite(stat),
                f'{self.name}: observed NaN or inf values; check the float '
                'model and its input data (e.g. a division by zero) before '
                'quantizing')

    @staticmethod
    def _all_reduce(tensor: Tensor, op: str = 'sum') -> Tensor:
        """All-reduce ``tensor`` in place across ranks; no-op if not running
        distributed. ``op`` is ``'sum'``, ``'min'``, ``'max'`` or ``'mean'``.
        """
        if not _is_distributed():
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
