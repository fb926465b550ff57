"""The interface every fake-quant module implements."""
from typing import Optional, Tuple, Union

import torch
from torch import Tensor, nn

from mmrazor_quant.compat.fake_quant_api import FakeQuantizeAPIMixin
from mmrazor_quant.compat.torch_style import WithArgsMixin
from mmrazor_quant.structures.quantization import QSchema

__all__ = ['BaseFakeQuantize']


class BaseFakeQuantize(WithArgsMixin, FakeQuantizeAPIMixin,
                       nn.Module):
    """Simulates quantization: ``dequant(quant(x))`` with qparams from an
    observer (or learned).

    State shared by all fake quants (all buffers, so checkpoints carry them):

    * ``observer`` - the observer submodule;
    * ``fake_quant_enabled`` / ``observer_enabled`` - ``uint8`` flags of
      shape ``[1]``;
    * ``scale`` / ``zero_point`` - current qparams (buffers, or parameters
      for learnable fake quants);
    * ``initialized`` - ``uint8`` flag, 1 once qparams came from data.

    Per-tensor qparams are 0-d tensors; per-channel ones are 1-d along
    ``qscheme.ch_axis``, empty until the first calibration batch,
    :meth:`init_qparams_shape` or a loaded checkpoint sizes them.

    Subclasses register the tensors named in ``_qparam_names`` and implement
    ``forward``. MMRazor's (torch.ao's) names ``with_args``,
    ``toggle_fake_quant``, ``toggle_observer_update`` and
    ``activation_post_process`` work too (:mod:`mmrazor_quant.compat`).

    Args:
        observer (dict | BaseObserver, optional): The observer, or its
            config. Only fixed (deploy-time) fake quants may omit it.
        qscheme (QSchema | dict, optional): The scheme; defaults to the
            observer's.

    Raises:
        ValueError: If neither an observer nor a qscheme is given.
    """

    #: Tracers keep this module as one ``call_module`` node.
    is_fx_leaf = True
    #: What ``QConfigHandler`` accepts as ``*_fake_quant`` (see its ROLES).
    quant_role = 'fake_quant'
    #: The qparam tensors, sized per channel and resized on load.
    _qparam_names: Tuple[str, ...] = ('scale', 'zero_point')

    def __init__(self,
                 observer: Optional[Union[dict, nn.Module]],
                 qscheme: Optional[Union[QSchema, dict]] = None) -> None:
        super().__init__()
        if observer is None and qscheme is None:
            raise ValueError(f'{type(self).__name__} needs an observer or a '
                             'qscheme')
        if isinstance(observer, dict):
            from mmrazor_quant.registry import MODELS, build_in_scope
            observer = dict(observer)
            if qscheme is not None:
                observer.setdefault('qscheme', qscheme)
            observer = build_in_scope(MODELS, observer)
        self.observer = observer
        if qscheme is None:
            qscheme = observer.qscheme
        qscheme = QSchema.from_dict(qscheme)
        if qscheme.is_per_channel is None and observer is not None:
            # The observer class decides, as in QConfigHandler.
            qscheme = qscheme.replace(
                is_per_channel=bool(observer.qscheme.is_per_channel))
        self.qscheme = qscheme
        self.register_buffer('fake_quant_enabled',
                             torch.tensor([1], dtype=torch.uint8))
        self.register_buffer('observer_enabled',
                             torch.tensor([1], dtype=torch.uint8))
        self.register_buffer('initialized',
                             torch.tensor([0], dtype=torch.uint8))
        # Python mirrors of the three flag buffers (see :meth:`_flag`).
        self._flags = dict(fake_quant_enabled=True, observer_enabled=True,
                           initialized=False)
        self._name = type(self).__name__

    # -- identity -------------------------------------------------------
    @property
    def name(self) -> str:
        """Where this fake quant sits, e.g. ``'backbone.conv1 (weight)'``."""
        return self._name

    @name.setter
    def name(self, value: str) -> None:
        self._name = value
        if self.observer is not None:
            self.observer.name = value

    # -- scheme ---------------------------------------------------------
    @property
    def quant_min(self) -> int:
        return self.qscheme.quant_min

    @property
    def quant_max(self) -> int:
        return self.qscheme.quant_max

    @property
    def ch_axis(self) -> int:
        return self.qscheme.ch_axis

    @property
    def is_per_channel(self) -> bool:
        return bool(self.qscheme.is_per_channel)

    # -- switches -------------------------------------------------------
    def _flag(self, name: str) -> bool:
        """The ``uint8`` flag buffer ``name`` as a Python bool.

        Eager, it is cached against the buffer object and its in-place
        version counter, so ``forward`` does not index and sync a tensor per
        call, while any write (``enable_*``, ``fill_``, ``load_state_dict``,
        DDP buffer broadcast, ``.to()``) is still seen. Under
        ``torch.compile`` it is the Python mirror kept by :meth:`_set_flag`
        and ``load_state_dict``: dynamo guards on it, so flipping a switch
        recompiles once instead of breaking the graph on ``bool(tensor)``.
        Switch a compiled model with the methods (``enable_observer``, ...),
        not by writing the buffers.
        """
        if torch.compiler.is_compiling():
            return self._flags[name]
        buf = getattr(self, name)
        cache = self.__dict__.setdefault('_flag_cache', {})
        hit = cache.get(name)
        if hit is not None and hit[0] is buf and hit[1] == buf._version:
            return hit[2]
        value = bool(buf[0])
        cache[name] = (buf, buf._version, value)
        self._flags[name] = value
        return value

    def _set_flag(self, name: str, value: bool) -> None:
        """Write the flag buffer ``name`` and its Python mirror."""
        getattr(self, name).fill_(1 if value else 0)
        self._flags[name] = bool(value)
        self.__dict__.get('_flag_cache', {}).pop(name, None)

    def __getstate__(self) -> dict:
        # A copy's buffers restart their version counters, which could
        # match a cached entry's: copies (deepcopy, pickle) read the flags
        # afresh.
        state = dict(super().__getstate__())
        state.pop('_flag_cache', None)
        return state

    @property
    def observer_on(self) -> bool:
        """Whether ``observer_enabled`` is set."""
        return self._flag('observer_enabled')

    @property
    def fake_quant_on(self) -> bool:
        """Whether ``fake_quant_enabled`` is set."""
        return self._flag('fake_quant_enabled')

    def enable_observer(self, enabled: bool = True) -> None:
        self._set_flag('observer_enabled', enabled)

    def disable_observer(self) -> None:
        self.enable_observer(False)

    def enable_fake_quant(self, enabled: bool = True) -> None:
        self._set_flag('fake_quant_enabled', enabled)

    def disable_fake_quant(self) -> None:
        self.enable_fake_quant(False)

    @property
    def is_initialized(self) -> bool:
        return self._flag('initialized')

    # -- qparams --------------------------------------------------------
    def _new_qparam(self, value: float, dtype: torch.dtype) -> Tensor:
        """An initial qparam: 0-d per-tensor (ONNX Runtime fuses only 0-d
        scales), empty per-channel until data or a checkpoint sizes it.
        """
        shape = (0, ) if self.is_per_channel else ()
        return torch.full(shape, value, dtype=dtype)

    @property
    def _default_zero_point(self) -> int:
        """0, or the nearest grid point to it (e.g. for ``[5, 10]``)."""
        return min(max(0, self.quant_min), self.quant_max)

    def _resize_qparam(self, name: str, num_channels: int) -> None:
        """Give the per-channel tensor ``name`` ``num_channels`` entries.

        Assigning ``.data`` keeps a parameter's identity, so an optimizer
        built earlier still updates it.
        """
        tensor = getattr(self, name)
        if tensor.shape != (num_channels, ):
            tensor.data = torch.empty(num_channels, dtype=tensor.dtype,
                                      device=tensor.device)

    def init_qparams_shape(self, num_channels: int) -> None:
        """Size per-channel qparams (buffers or parameters) for
        ``num_channels`` channels before training starts, so the optimizer
        and checkpoints see their final shape. A no-op per-tensor.

        Resized qparams start at ``scale = 1`` and the default zero-point;
        qparams already of the right size keep their values.

        Args:
            num_channels (int): ``x.shape[ch_axis]`` of the tensor this
                module will quantize.

        Raises:
            ValueError: If ``num_channels`` is not a positive int.
        """
        if isinstance(num_channels, bool) or not isinstance(
                num_channels, int) or num_channels < 1:
            raise ValueError(f'{self.name}: num_channels must be a positive '
                             f'int, got {num_channels!r}')
        if not self.is_per_channel:
            return
        for name in self._qparam_names:
            tensor = getattr(self, name)
            if tensor.shape == (num_channels, ):
                continue
            self._resize_qparam(name, num_channels)
            initial = 1.0 if name == 'scale' else self._default_zero_point
            with torch.no_grad():
                tensor.fill_(initial)

    def _set_qparams(self, scale: Tensor, zero_point: Tensor) -> None:
        """Copy observer qparams into ``scale``/``zero_point`` in place.

        Writes go through ``.data`` so that a later forward's copy does not
        invalidate an autograd graph that saved the parameter (several
        forwards before one backward).
        """
        for name, value in (('scale', scale), ('zero_point', zero_point)):
            tensor = getattr(self, name)
            if value.numel() != tensor.numel() and self.is_per_channel:
                self._resize_qparam(name, value.numel())
            tensor.data.copy_(value.reshape(tensor.shape))
        if not self._flag('initialized'):
            self._set_flag('initialized', True)

    def _check_initialized(self) -> None:
        if not self._flag('initialized'):
            raise RuntimeError(
                f'{self.name} has no qparams: it was never calibrated. Run a '
                'calibration pass with observers enabled (enable_observer) '
                'or load a calibrated checkpoint first')

    def calculate_qparams(self) -> Tuple[Tensor, Tensor]:
        """qparams from the observer's statistics."""
        return self.observer.calculate_qparams()

    def _current_qparams(self) -> Tuple[Tensor, Tensor]:
        """The (possibly learned, float) scale and zero-point in use."""
        return self.scale, self.zero_point

    def get_qparams(self) -> Tuple[Tensor, Tensor]:
        """The qparams in use, fixed for deploy: float32 ``scale`` and int32
        ``zero_point`` (a learned float zero-point is rounded and clamped to
        ``[quant_min, quant_max]``). 0-d per-tensor, 1-d per-channel;
        detached copies.

        Raises:
            RuntimeError: If the module was never calibrated.
        """
        self._check_initialized()
        scale, zero_point = self._current_qparams()
        scale = scale.detach().to(torch.float32).clone()
        zero_point = zero_point.detach()
        if zero_point.is_floating_point():
            zero_point = zero_point.round().clamp(self.quant_min,
                                                  self.quant_max)
        return scale, zero_point.to(torch.int32).clone()

    def _load_from_state_dict(self, state_dict: dict, prefix: str, *args,
                              **kwargs) -> None:
        """Resize per-channel qparams to the checkpoint's shape first, and
        accept shape-``[1]`` per-tensor qparams (torch/MMRazor checkpoints).
        """
        for name in self._qparam_names:
            key = prefix + name
            tensor = getattr(self, name, None)
            if key not in state_dict or not isinstance(tensor, Tensor):
                continue
            value = state_dict[key]
            if self.is_per_channel and value.dim() == 1:
                self._resize_qparam(name, value.numel())
            elif not self.is_per_channel and value.numel() == 1:
                state_dict[key] = value.reshape(tensor.shape)
        self._check_zero_point_on_grid(state_dict.get(prefix + 'zero_point'),
                                       prefix + 'zero_point')
        super()._load_from_state_dict(state_dict, prefix, *args, **kwargs)
        for name in self._flags:  # the loaded switches, for compiled code
            self._flags[name] = bool(getattr(self, name)[0])

    def _check_zero_point_on_grid(self, value, key: str) -> None:
        """Refuse zero-points off this fake quant's grid: the checkpoint
        was quantized for another backend or bit-width (e.g. uint8
        activations loaded into a signed int8 TensorRT model), and loading
        it would give a silently wrong model."""
        if not isinstance(value, Tensor) or not value.numel():
            return
        low, high = float(value.min()), float(value.max())
        # learnable zero-points are floats, rounded when used
        if low < self.quant_min - 0.5 or high > self.quant_max + 0.5:
            raise ValueError(
                f'{key}: the checkpoint\'s zero-points span [{low:g}, '
                f'{high:g}], outside this fake quant\'s grid '
                f'[{self.quant_min}, {self.quant_max}]: the checkpoint was '
                'quantized for another backend or bit-width; use the '
                'config it was made with')

    def forward(self, x: Tensor) -> Tensor:
        raise NotImplementedError

    def extra_repr(self) -> str:
        return (f'fake_quant_enabled={int(self.fake_quant_enabled[0])}, '
                f'observer_enabled={int(self.observer_enabled[0])}, '
                f'quant_range={self.qscheme.quant_range}, '
                f'granularity={self.qscheme.granularity}, '
                f'rounding={self.qscheme.rounding.value}')
