r"""Per-tensor statistics: range, outliers and the quantization noise.

For a tensor :math:`x` and its fake-quantized :math:`q(x)`:

* ``min``/``max``/``mean``/``std`` of :math:`x`;
* ``outlier_ratio``: the fraction of elements with
  :math:`|x_i - \mu| > k\sigma` (a Gaussian gives 0.27 % at
  :math:`k = 3`);
* ``range_ratio``: :math:`\max|x| / P_{99.9}(|x|)`, how much of the
  quantization range the 0.1 % largest magnitudes take (≈1–1.5 for a
  Gaussian; a large value means a min/max range wastes most levels);
* ``beyond_percentile``: the fraction of elements with
  :math:`|x_i| > f \cdot P_{99.9}(|x|)`;
* ``noise_snr``: :func:`~.metrics.snr_db` of :math:`q(x)` against
  :math:`x`, and a histogram of the noise :math:`q(x) - x`.
"""
from dataclasses import dataclass
from typing import Dict, List, Sequence, Tuple

import torch
from torch import Tensor, nn

from mmrazor_quant.models.utils import tensor_graph_module
from .graphwise import analysis_mode
from .layers import find_quantized_layers
from .metrics import snr_db

__all__ = [
    'TensorStats', 'tensor_statistics', 'noise_histogram',
    'weight_statistics', 'activation_samples'
]

# torch.quantile refuses inputs above 2**24 elements; larger tensors are
# subsampled with a fixed stride.
_QUANTILE_LIMIT = 1 << 24


@dataclass
class TensorStats:
    """Statistics of one tensor (see the module docstring)."""
    name: str
    numel: int
    min: float
    max: float
    mean: float
    std: float
    outlier_ratio: float
    range_ratio: float
    beyond_percentile: float
    noise_snr: float


def _abs_percentile(x: Tensor, q: float) -> float:
    flat = x.abs().flatten()
    if flat.numel() > _QUANTILE_LIMIT:
        flat = flat[::flat.numel() // _QUANTILE_LIMIT + 1]
    return float(torch.quantile(flat, q))


def tensor_statistics(name: str,
                      x: Tensor,
                      quantized: Tensor,
                      k: float = 3.0,
                      factor: float = 2.0,
                      percentile: float = 0.999) -> TensorStats:
    r"""Range, outlier and noise statistics of ``x`` and its fake-quantized
    ``quantized``.

    Args:
        name (str): Name of the tensor.
        x (Tensor): Float values.
        quantized (Tensor): :math:`q(x)`, same shape.
        k (float): Outliers are beyond ``k`` standard deviations of the
            mean. Defaults to 3.
        factor (float): ``beyond_percentile`` counts :math:`|x| >`
            ``factor`` times the ``percentile`` of :math:`|x|`. Defaults
            to 2.
        percentile (float): In (0, 1). Defaults to 0.999.

    Returns:
        TensorStats

    Raises:
        ValueError: If ``x`` is empty or the shapes differ.
    """
    if x.numel() == 0:
        raise ValueError(f'{name}: statistics of an empty tensor')
    if x.shape != quantized.shape:
        raise ValueError(f'{name}: x {tuple(x.shape)} and quantized '
                         f'{tuple(quantized.shape)} differ in shape')
    x = x.detach().float()
    mean, std = float(x.mean()), float(x.std(unbiased=False))
    outliers = float(((x - mean).abs() > k * std).float().mean()) \
        if std > 0 else 0.0
    p = _abs_percentile(x, percentile)
    absmax = float(x.abs().max())
    return TensorStats(
        name=name,
        numel=x.numel(),
        min=float(x.min()),
        max=float(x.max()),
        mean=mean,
        std=std,
        outlier_ratio=outliers,
        range_ratio=absmax / p if p > 0 else float('inf') if absmax else 1.,
        beyond_percentile=float((x.abs() > factor * p).float().mean()),
        noise_snr=snr_db(x, quantized.detach().float()))


def noise_histogram(x: Tensor, quantized: Tensor,
                    bins: int = 64) -> Tuple[Tensor, Tensor]:
    """Histogram of the quantization noise ``quantized - x``.

    Returns:
        tuple: ``(counts, edges)`` with ``bins`` counts and ``bins + 1``
        edges (as :func:`torch.histogram`).
    """
    noise = (quantized.detach().float() - x.detach().float()).flatten()
    return torch.histogram(noise, bins=bins)


def weight_statistics(model: nn.Module, **kwargs) -> List[TensorStats]:
    """:func:`tensor_statistics` of every quantized layer's weight (the
    weight the layer quantizes, BN folded in for fused Conv-BN layers), in
    graph order.

    Args:
        model (nn.Module): A calibrated ``MMArchitectureQuant`` or
            GraphModule.
        **kwargs: ``k``, ``factor``, ``percentile`` of
            :func:`tensor_statistics`.
    """
    gm = tensor_graph_module(model)
    stats = []
    with analysis_mode(gm), torch.no_grad():
        for layer in find_quantized_layers(gm):
            weight = quantized_weight_input(layer.module)
            layer.weight_fake_quant.enable_fake_quant()
            stats.append(
                tensor_statistics(layer.name, weight,
                                  layer.weight_fake_quant(weight), **kwargs))
    return stats


def quantized_weight_input(module: nn.Module) -> Tensor:
    """The float weight a QAT module hands to its weight fake quant: the
    BN-folded weight of fused Conv-BN / Linear-BN modules (inference
    regime), the plain weight otherwise."""
    folded = getattr(module, 'get_folded_weight_bias', None)
    if callable(folded):
        return folded()[0].detach()
    return module.weight.detach()


def activation_samples(model: nn.Module, inputs: Sequence[Tensor],
                       names: Sequence[str]) -> Dict[str, Tuple[Tensor,
                                                                Tensor]]:
    """Input and output of the named activation fake quants (fake quants
    on) over ``inputs``: ``{name: (x, q(x))}``, batches concatenated along
    the first dimension."""
    gm = tensor_graph_module(model)
    collected: Dict[str, List[Tuple[Tensor, Tensor]]] = {n: [] for n in names}
    handles = []
    for name in names:
        module = gm.get_submodule(name)

        def hook(mod, args, out, name=name):
            collected[name].append((args[0].detach(), out.detach()))

        handles.append(module.register_forward_hook(hook))
    try:
        with analysis_mode(gm), torch.no_grad():
            for fq in names:
                gm.get_submodule(fq).enable_fake_quant()
            for x in inputs:
                gm(x)
    finally:
        for handle in handles:
            handle.remove()
    return {
        name: (torch.cat([a.flatten() for a, _ in pairs]),
               torch.cat([b.flatten() for _, b in pairs]))
        for name, pairs in collected.items() if pairs
    }
