"""Shared helpers: weight fake quants built as a quantizer would build them
(``QConfigHandler`` with the project's ``FakeQuantize`` and
``PerChannelMinMaxObserver``), and an independent reference formula."""
import torch
from torch import Tensor, nn

from mmrazor_quant.models.fake_quants.base import BaseFakeQuantize
from mmrazor_quant.structures.quantization import QConfigHandler

W_QSCHEME = dict(
    qdtype='qint8', bit=8, is_symmetry=True, is_symmetric_range=True)


def qconfig(w_fake_quant='mmrazor_quant.FakeQuantize',
            w_observer='mmrazor_quant.PerChannelMinMaxObserver'
            ) -> QConfigHandler:
    return QConfigHandler(
        dict(
            w_observer=dict(type=w_observer),
            a_observer=dict(type='mmrazor_quant.MinMaxObserver'),
            w_fake_quant=dict(type=w_fake_quant),
            a_fake_quant=dict(type='mmrazor_quant.FakeQuantize'),
            w_qscheme=W_QSCHEME,
            a_qscheme=dict(qdtype='quint8', bit=8, is_symmetry=True)))


_QCONFIG = None


def make_fake_quant() -> BaseFakeQuantize:
    """Per-channel symmetric 8-bit (``[-127, 127]``) min-max fake quant."""
    global _QCONFIG
    if _QCONFIG is None:
        _QCONFIG = qconfig()
    return _QCONFIG.build_weight_fake_quant()


def fake_quant_factory(name: str, module: nn.Module) -> BaseFakeQuantize:
    return make_fake_quant()


def per_channel_fake_quant(w: Tensor) -> Tensor:
    """The reference: ``round(w / s).clamp(-127, 127) * s`` with
    ``s = max|w| / 127`` per output channel (what a fresh min-max fake quant
    computes on its first tensor)."""
    scale = (w.detach().abs().flatten(1).amax(1) / 127).clamp(min=1e-8)
    zero_point = torch.zeros_like(scale, dtype=torch.int32)
    return torch.fake_quantize_per_channel_affine(w, scale, zero_point, 0,
                                                  -127, 127)


def set_fake_quant(model: nn.Module, enabled: bool) -> None:
    for module in model.modules():
        if isinstance(module, BaseFakeQuantize):
            module.enable_fake_quant(enabled)


def randomize_bn(bn: nn.Module, seed: int = 0) -> nn.Module:
    """Non-trivial affine parameters and running statistics."""
    g = torch.Generator().manual_seed(seed)
    n = bn.num_features
    with torch.no_grad():
        bn.weight.copy_(torch.rand(n, generator=g) * 1.5 + 0.25)
        bn.weight[0] = -bn.weight[0]  # a negative gamma flips the fold
        bn.bias.copy_(torch.randn(n, generator=g))
        bn.running_mean.copy_(torch.randn(n, generator=g) * 0.5)
        bn.running_var.copy_(torch.rand(n, generator=g) + 0.5)
    return bn
