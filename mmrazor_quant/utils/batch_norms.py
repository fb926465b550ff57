"""Batch-norm statistics of a random-weight network, drawn as training
leaves them."""
import torch
from torch import nn

__all__ = ['trained_like_batch_norms']


def trained_like_batch_norms(model: nn.Module, seed: int = 1) -> None:
    """Draw every BN's statistics and affine parameters as training leaves
    them (seeded), for a network with random weights.

    As initialised, every BN has mean 0, variance 1 and shift 0 (mmcls's
    ResNet also scale 0 in each block's last BN), so folding gives all-zero
    biases (and all-zero residual convs), which no trained network has:
    OpenVINO's CPU plugin drops a zero bias and compiles a conv that feeds
    a residual sum with other post-ops, and a parity check on such a model
    checks none of the bias arithmetic. Drawn: scale in ``[0.5, 1]``, shift
    ``0.1 N(0, 1)``, running mean ``0.1 N(0, 1)``, running variance in
    ``[0.5, 1.5]``.

    Args:
        model (nn.Module): Its ``_BatchNorm`` modules are changed in place.
        seed (int): Seed of the draw. Defaults to 1.
    """
    gen = torch.Generator().manual_seed(seed)
    for bn in model.modules():
        if not isinstance(bn, nn.modules.batchnorm._BatchNorm):
            continue
        size = (bn.num_features, )
        with torch.no_grad():
            if bn.affine:
                bn.weight.copy_(0.5 + 0.5 * torch.rand(size, generator=gen))
                bn.bias.copy_(0.1 * torch.randn(size, generator=gen))
            if bn.track_running_stats:
                bn.running_mean.copy_(0.1 * torch.randn(size, generator=gen))
                bn.running_var.copy_(0.5 + torch.rand(size, generator=gen))
