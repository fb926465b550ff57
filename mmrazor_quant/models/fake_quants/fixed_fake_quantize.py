"""Deploy-time fake quant: frozen qparams, no observer, no branches."""
from typing import Optional, Union

import torch
from torch import Tensor, nn

from mmrazor_quant.registry import MODELS
from mmrazor_quant.structures.quantization import QSchema
from .base import BaseFakeQuantize
from .functional import fake_quantize
from .kernels import check_float_input

__all__ = ['FixedFakeQuantize']


@MODELS.register_module()
class FixedFakeQuantize(BaseFakeQuantize):
    """Fake quantization with frozen qparams, for export and deployment.

    ``forward(x) = (clamp(round(x / s) + z, qmin, qmax) - z) * s`` always:
    it reads no flags and has no data-dependent Python branch, so export
    tracers see plain ops. The switches (``enable_observer``,
    ``disable_fake_quant``, ...) have no effect on it.

    Buffers: ``scale`` (float32) and ``zero_point`` (int32), 0-d per-tensor
    and 1-d per-channel.

    Args:
        qscheme (QSchema | dict, optional): The scheme. Defaults to the
            observer's.
        scale (Tensor, optional): The scale(s). If given with
            ``zero_point``, the module counts as calibrated. Defaults to None.
        zero_point (Tensor, optional): The zero-point(s); float values are
            rounded and clamped. Defaults to None.
        observer (dict | BaseObserver, optional): Kept only for interface
            compatibility (it is never run). Defaults to None.

    Raises:
        ValueError: If neither ``qscheme`` nor ``observer`` is given, only
            one of ``scale`` / ``zero_point`` is, or their sizes do not
            match the granularity.
    """

    def __init__(self,
                 qscheme: Optional[Union[QSchema, dict]] = None,
                 scale: Optional[Tensor] = None,
                 zero_point: Optional[Tensor] = None,
                 observer: Optional[Union[dict, nn.Module]] = None) -> None:
        super().__init__(observer, qscheme)
        self.disable_observer()
        self.register_buffer('scale', self._new_qparam(1.0, torch.float32))
        self.register_buffer(
            'zero_point',
            self._new_qparam(self._default_zero_point, torch.int32))
        if (scale is None) != (zero_point is None):
            raise ValueError(f'{type(self).__name__}: give both scale and '
                             'zero_point, or neither')
        if scale is not None:
            self._set_fixed(
                torch.as_tensor(scale), torch.as_tensor(zero_point))

    def _set_fixed(self, scale: Tensor, zero_point: Tensor) -> None:
        if scale.numel() != zero_point.numel() or (
                not self.is_per_channel and scale.numel() != 1):
            raise ValueError(
                f'{type(self).__name__}: scale ({scale.numel()} values) and '
                f'zero_point ({zero_point.numel()} values) do not fit a '
                f'{self.qscheme.granularity} scheme')
        if zero_point.is_floating_point():
            zero_point = zero_point.round().clamp(self.quant_min,
                                                  self.quant_max)
        device = scale.device
        self.scale.data = self.scale.data.to(device)
        self.zero_point.data = self.zero_point.data.to(device)
        self._set_qparams(scale.float(), zero_point.int())

    @classmethod
    def from_fake_quant(cls, fake_quant: BaseFakeQuantize
                        ) -> 'FixedFakeQuantize':
        """Freeze any calibrated fake quant's :meth:`get_qparams`.

        Args:
            fake_quant (BaseFakeQuantize): A calibrated fake quant.

        Returns:
            FixedFakeQuantize: Same scheme, name and qparams (on the same
            device), in eval mode if ``fake_quant`` was.

        Raises:
            RuntimeError: If ``fake_quant`` was never calibrated.
        """
        scale, zero_point = fake_quant.get_qparams()
        fixed = cls(qscheme=fake_quant.qscheme, scale=scale,
                    zero_point=zero_point)
        fixed.name = fake_quant.name
        return fixed.train(fake_quant.training)

    def forward(self, x: Tensor) -> Tensor:
        """Fake-quantize ``x`` with the frozen qparams."""
        check_float_input(x, self.name)
        return fake_quantize(
            x, self.scale, self.zero_point, self.quant_min, self.quant_max,
            self.ch_axis if self.is_per_channel else None,
            self.qscheme.rounding)
