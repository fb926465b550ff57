"""The method names MMRazor's code calls on fake quants (torch.ao's
``FakeQuantizeBase`` API and MMRazor's LSQ switches), on ours.

Only names are added: the state stays this project's. ``static_enabled``
is ``observer_enabled`` (in MMRazor's LSQ module both meant "the observer
sets the qparams") and ``learning_enabled`` is read from
``scale.requires_grad``, so a state dict keeps its layout.
"""
import torch
from torch import Tensor, nn

__all__ = [
    'FakeQuantizeAPIMixin', 'LearnableAPIMixin', 'enable_param_learning',
    'enable_static_estimate', 'enable_val'
]

_TORCH_QSCHEMES = {
    (False, False): torch.per_tensor_affine,
    (True, False): torch.per_tensor_symmetric,
    (False, True): torch.per_channel_affine,
    (True, True): torch.per_channel_symmetric,
}


class FakeQuantizeAPIMixin:
    """torch.ao ``FakeQuantizeBase`` names used by MMRazor's code."""

    @property
    def activation_post_process(self) -> nn.Module:
        """The observer (torch.ao's name for it)."""
        return self.observer

    @property
    def static_enabled(self) -> Tensor:
        """MMRazor's LSQ name of the ``observer_enabled`` flag buffer."""
        return self.observer_enabled

    @property
    def dtype(self) -> torch.dtype:
        """``torch.qint8`` for signed schemes, else ``torch.quint8``."""
        return torch.qint8 if self.qscheme.is_signed else torch.quint8

    @property
    def torch_qscheme(self) -> torch.qscheme:
        """The ``torch.per_*`` value of this scheme (MMRazor's
        ``fake_quant.qscheme``; here ``qscheme`` is the :class:`QSchema`)."""
        qs = self.qscheme
        return _TORCH_QSCHEMES[(qs.is_symmetry, bool(qs.is_per_channel))]

    @property
    def bitwidth(self) -> int:
        return self.qscheme.bit

    def toggle_fake_quant(self,
                          enabled: bool = True) -> 'FakeQuantizeAPIMixin':
        """Turn fake quantization on or off; returns self."""
        self.enable_fake_quant(enabled)
        return self

    def toggle_observer_update(self,
                               enabled: bool = True) -> 'FakeQuantizeAPIMixin':
        """Turn the observer (static qparam estimate) on or off; returns
        self."""
        self.enable_observer(enabled)
        return self


class LearnableAPIMixin:
    """MMRazor's LSQ switches, on :class:`LearnableFakeQuantize`."""

    @property
    def learning_enabled(self) -> Tensor:
        """``[1]`` while the scale is trained (``requires_grad``)."""
        return torch.tensor([int(self.scale.requires_grad)],
                            dtype=torch.uint8)

    def toggle_qparam_learning(self,
                               enabled: bool = True) -> 'LearnableAPIMixin':
        """Train the scale (and a trainable zero-point) or freeze them."""
        self.scale.requires_grad_(enabled)
        if self.zero_point_trainable:
            self.zero_point.requires_grad_(enabled)
        return self

    def enable_param_learning(self) -> 'LearnableAPIMixin':
        """Learn qparams: fake quant on, observer off, scale trained."""
        self.toggle_qparam_learning(True).toggle_fake_quant(True)
        self.toggle_observer_update(False)
        return self

    def enable_static_estimate(self) -> 'LearnableAPIMixin':
        """Observer sets the qparams each forward; fake quant on; frozen."""
        self.toggle_qparam_learning(False).toggle_fake_quant(True)
        self.toggle_observer_update(True)
        return self

    def enable_val(self) -> 'LearnableAPIMixin':
        """Fixed qparams: fake quant on, observer off, frozen."""
        self.toggle_qparam_learning(False).toggle_fake_quant(True)
        self.toggle_observer_update(False)
        return self

    def enable_static_observation(self) -> 'LearnableAPIMixin':
        """Observe only: observer on, fake quant off, frozen."""
        self.toggle_qparam_learning(False).toggle_fake_quant(False)
        self.toggle_observer_update(True)
        return self

    def observe_quant_params(self) -> None:
        """Log the current scale and zero-point."""
        from mmengine.logging import print_log
        print_log(
            f'{self.name} scale: {self.scale.detach()}, zero_point: '
            f'{self.zero_point.detach()}',
            logger='current')


def _apply_if_learnable(module: nn.Module, method: str) -> None:
    if isinstance(module, LearnableAPIMixin):
        getattr(module, method)()


def enable_param_learning(module: nn.Module) -> None:
    """``model.apply(enable_param_learning)``: see
    :meth:`LearnableAPIMixin.enable_param_learning`."""
    _apply_if_learnable(module, 'enable_param_learning')


def enable_static_estimate(module: nn.Module) -> None:
    """``model.apply(enable_static_estimate)``: see
    :meth:`LearnableAPIMixin.enable_static_estimate`."""
    _apply_if_learnable(module, 'enable_static_estimate')


def enable_val(module: nn.Module) -> None:
    """``model.apply(enable_val)``: see :meth:`LearnableAPIMixin.enable_val`.
    """
    _apply_if_learnable(module, 'enable_val')
