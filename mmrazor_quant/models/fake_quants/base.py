"""The interface every fake-quant module implements."""
from typing import Optional, Tuple, Union

import torch
from torch import Tensor, nn

from mmrazor_quant.structures.quantization import QSchema

__all__ = ['BaseFakeQuantize']


class BaseFakeQuantize(nn.Module):
    """Simulates quantization: ``dequant(quant(x))`` with qparams from an
    observer (or learned).

    State shared by all fake quants (all buffers, so checkpoints carry them):

    * ``observer`` - the observer submodule;
    * ``fake_quant_enabled`` / ``observer_enabled`` - ``uint8`` flags of
      shape ``[1]``;
    * ``scale`` / ``zero_point`` - current qparams (buffers, or parameters
      for learnable fake quants);
    * ``initialized`` - ``uint8`` flag, 1 once qparams came from data.

    Args:
        observer (dict | BaseObserver): The observer, or its config.
        qscheme (QSchema | dict, optional): The scheme; defaults to the
            observer's.
    """

    #: Tracers keep this module as one ``call_module`` node.
    is_fx_leaf = True

    def __init__(self,
                 observer: Union[dict, nn.Module],
                 qscheme: Optional[Union[QSchema, dict]] = None) -> None:
        super().__init__()
        if isinstance(observer, dict):
            from mmrazor_quant.registry import MODELS
            observer = dict(observer)
            if qscheme is not None:
                observer.setdefault('qscheme', qscheme)
            observer = MODELS.build(observer)
        self.observer = observer
        if qscheme is None:
            qscheme = observer.qscheme
        self.qscheme = QSchema.from_dict(qscheme) if isinstance(
            qscheme, dict) else qscheme
        self.register_buffer('fake_quant_enabled',
                             torch.tensor([1], dtype=torch.uint8))
        self.register_buffer('observer_enabled',
                             torch.tensor([1], dtype=torch.uint8))
        self.register_buffer('initialized',
                             torch.tensor([0], dtype=torch.uint8))
        self._name = type(self).__name__

    # -- identity -------------------------------------------------------
    @property
    def name(self) -> str:
        """Where this fake quant sits, e.g. ``'backbone.conv1 (weight)'``."""
        return self._name

    @name.setter
    def name(self, value: str) -> None:
        self._name = value
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
    def enable_observer(self, enabled: bool = True) -> None:
        self.observer_enabled[0] = 1 if enabled else 0

    def disable_observer(self) -> None:
        self.enable_observer(False)

    def enable_fake_quant(self, enabled: bool = True) -> None:
        self.fake_quant_enabled[0] = 1 if enabled else 0

    def disable_fake_quant(self) -> None:
        self.enable_fake_quant(False)

    @property
    def is_initialized(self) -> bool:
        return bool(self.initialized[0])

    # -- qparams --------------------------------------------------------
    def init_qparams_shape(self, num_channels: int) -> None:
        """Size per-channel qparams (buffers or parameters) for
        ``num_channels`` channels before training starts, so the optimizer
        and checkpoints see their final shape. A no-op per-tensor.
        """
        raise NotImplementedError

    def calculate_qparams(self) -> Tuple[Tensor, Tensor]:
        """qparams from the observer's statistics."""
        return self.observer.calculate_qparams()

    def get_qparams(self) -> Tuple[Tensor, Tensor]:
        """The qparams in use, fixed for deploy: float32 ``scale`` and int32
        ``zero_point`` (a learned float zero-point is rounded and clamped).

        Raises:
            RuntimeError: If the module was never calibrated.
        """
        raise NotImplementedError

    def forward(self, x: Tensor) -> Tensor:
        raise NotImplementedError

    def extra_repr(self) -> str:
        return (f'fake_quant_enabled={int(self.fake_quant_enabled[0])}, '
                f'observer_enabled={int(self.observer_enabled[0])}, '
                f'quant_range={self.qscheme.quant_range}, '
                f'granularity={self.qscheme.granularity}, '
                f'rounding={self.qscheme.rounding.value}')
