r"""Reconstruction-based PTQ: AdaRound, BRECQ and QDrop.

All three learn the rounding of the weights (:class:`AdaRoundFakeQuantize`)
unit by unit, in graph order, minimising

.. math::

    \mathcal{L} = \big\| f_u(\tilde x; \tilde W) - f_u(x; W) \big\|^2
    + \lambda \sum_i \big(1 - |2 h(V_i) - 1|^{\beta}\big)

where :math:`f_u` is the unit, :math:`x` / :math:`W` its float input and
weights, :math:`\tilde x` its input in the quantized model (earlier units
already hard-rounded) and :math:`\tilde W` the soft-rounded weights
(:math:`h` is the rectified sigmoid). The squared error is summed over
channels and averaged over the batch and positions. :math:`\beta` is
annealed linearly from 20 to 2 after a warm-up (20 % of the iterations)
without regulariser. Then the rounding is made hard and, once every unit
is done, the hard-rounded weights are written into the float weights
(divided by the BN scale for BN-fused layers) and the original weight fake
quants come back: the model is an ordinary quantized model whose weights
lie on the grid, which calibrated checkpoints and the deploy tools handle
as usual.

* **AdaRound** (Nagel et al., 2020): the unit is one layer.
* **BRECQ** (Li et al., 2021): the unit is an mmcls residual block
  (``BasicBlock``, ``Bottleneck``, ``InvertedResidual``; layers outside
  blocks are their own units); activation quantization inside the unit is
  off during reconstruction (weights only).
* **QDrop** (Wei et al., 2022): BRECQ's units, with every activation fake
  quant inside the unit on but each element kept float with probability
  ``drop_prob`` (:func:`drop_quantization`). ``drop_prob=1.0`` is BRECQ.

Randomness (the mini-batches, QDrop's masks) comes from generators seeded
by ``seed``: the result is deterministic.
"""
import time
from typing import List, Optional, Sequence, Tuple

import torch
from mmengine.logging import MMLogger
from torch import Tensor, fx, nn

from mmrazor_quant.models.fake_quants import (
    AdaRoundFakeQuantize,
    BaseFakeQuantize,
    disable_fake_quant,
    disable_observer,
    enable_fake_quant,
    preserve_quant_state,
)
from mmrazor_quant.models.fake_quants.adaround import rounding_regularizer
from mmrazor_quant.models.fake_quants.qdrop import drop_quantization
from mmrazor_quant.models.qat_modules import is_qat_module
from mmrazor_quant.models.utils import tensor_graph_module
from mmrazor_quant.registry import TASK_UTILS
from mmrazor_quant.utils.model_inputs import (
    Inputs,
    cat_inputs,
    select_samples,
)
from mmrazor_quant.utils.model_inputs import num_samples as count_samples
from .graph_utils import capture, extract_unit, find_units, owner_modules

__all__ = ['adaround', 'brecq', 'qdrop', 'reconstruct', 'sample_inputs',
           'sample_indices', 'bake_rounding']


def sample_inputs(data, num_samples: int, seed: int = 0) -> Inputs:
    """``num_samples`` inputs drawn without replacement (seeded) from a
    batch or a sequence of batches (tensors, or dicts of tensors by input
    name for a model with several inputs).

    Raises:
        ValueError: If there is no data.
    """
    if data is None:
        raise ValueError('this PTQ pass needs calibration data')
    inputs = data if isinstance(data, (Tensor, dict)) else cat_inputs(data)
    total = count_samples(inputs)
    if total == 0:
        raise ValueError('this PTQ pass got no calibration samples')
    picked = sample_indices(total, num_samples, seed)
    return inputs if picked is None else select_samples(inputs, picked)


def sample_indices(total: int, num_samples: int,
                   seed: int = 0) -> Optional[Tensor]:
    """The indices :func:`sample_inputs` draws from ``total`` samples, or
    ``None`` where it takes them all (in their order)."""
    if num_samples >= total:
        return None
    g = torch.Generator().manual_seed(seed)
    return torch.randperm(total, generator=g)[:num_samples]


class _UnitActivation(nn.Module):
    """An activation fake quant inside the unit being reconstructed:
    off (``drop_prob=None``) or randomly dropped."""

    def __init__(self, fake_quant: BaseFakeQuantize,
                 drop_prob: Optional[float],
                 generator: torch.Generator) -> None:
        super().__init__()
        self.fake_quant = fake_quant
        self.drop_prob = drop_prob
        self.generator = generator

    def forward(self, x: Tensor) -> Tensor:
        if self.drop_prob is None:
            return x
        return drop_quantization(x, self.fake_quant(x), self.drop_prob,
                                 self.generator)


def _install_adaround(module: nn.Module
                      ) -> Tuple[AdaRoundFakeQuantize,
                                 Optional[BaseFakeQuantize]]:
    """Give ``module`` an AdaRound weight fake quant in soft mode; returns
    it and the fake quant it replaced (None if it already was one)."""
    original = module.weight_fake_quant
    if isinstance(original, AdaRoundFakeQuantize):
        fake_quant, original = original, None
        fake_quant.disable_observer()
    else:
        fake_quant = AdaRoundFakeQuantize.from_fake_quant(original)
        module.weight_fake_quant = fake_quant
    fake_quant.enable_fake_quant()
    fake_quant.init_alpha(module.get_folded_weight_bias()[0])
    fake_quant.rounding = 'soft'
    return fake_quant, original


@torch.no_grad()
def bake_rounding(module: nn.Module,
                  original: Optional[BaseFakeQuantize] = None) -> None:
    """Write the hard-rounded weight into ``module.weight`` and restore the
    ``original`` weight fake quant (or set the AdaRound one to nearest).

    For a BN-fused layer the folded weight :math:`s \\cdot W` is what is
    rounded, so :math:`W \\leftarrow \\tilde W_{fold} / s` (channels with
    :math:`s = 0` keep their weight).
    """
    fake_quant = module.weight_fake_quant
    fake_quant.rounding = 'hard'
    fake_quant.enable_fake_quant()
    folded = module.get_folded_weight_bias()[0]
    weight = fake_quant(folded)
    if getattr(module, 'bn', None) is not None:
        bn_scale = module._bn_scale_shift()[0]
        view = bn_scale.reshape([-1] + [1] * (weight.dim() - 1))
        weight = torch.where(view == 0, module.weight,
                             weight / torch.where(view == 0,
                                                  torch.ones_like(view),
                                                  view))
    module.weight.copy_(weight)
    if original is not None:
        module.weight_fake_quant = original
    else:
        fake_quant.drop_alpha()


def _unit_loss(outputs, targets) -> Tensor:
    """Squared error summed over channels, mean over the rest."""
    if isinstance(outputs, Tensor):
        outputs = (outputs, )
    loss = 0
    for out, target in zip(outputs, targets):
        err = (out - target).pow(2)
        loss = loss + (err.sum(1) if err.dim() > 1 else err).mean()
    return loss


def _beta(step: int, iters: int, warmup: float,
          beta_range: Tuple[float, float]) -> Optional[float]:
    """β for ``step``: None during warm-up, then linear from start to end."""
    warm = int(warmup * iters)
    if step < warm:
        return None
    rel = (step - warm) / max(1, iters - warm)
    start, end = beta_range
    return end + (start - end) * max(0.0, 1 - rel)


def _optimize_unit(unit: fx.GraphModule, inputs: List[Tensor],
                   targets: List[Tensor],
                   fake_quants: List[AdaRoundFakeQuantize], iters: int,
                   batch_size: int, lr: float, weight: float,
                   beta_range, warmup: float,
                   generator: torch.Generator) -> Tuple[float, float]:
    """Adam on the ``alpha`` of ``fake_quants``; returns the first and last
    reconstruction losses."""
    params = [fq.alpha for fq in fake_quants]
    optimizer = torch.optim.Adam(params, lr=lr)
    num = len(inputs[0])
    first = last = float('nan')
    for step in range(iters):
        idx = torch.randint(num, (min(batch_size, num), ),
                            generator=generator)
        out = unit(*[x[idx] for x in inputs])
        rec = _unit_loss(out, [t[idx] for t in targets])
        beta = _beta(step, iters, warmup, beta_range)
        loss = rec
        if beta is not None:
            loss = rec + weight * sum(
                rounding_regularizer(fq.alpha, beta) for fq in fake_quants)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if step == 0:
            first = rec.item()
        last = rec.item()
    return first, last


def reconstruct(model: nn.Module,
                data,
                granularity: str = 'block',
                drop_prob: Optional[float] = None,
                iters: int = 200,
                batch_size: int = 32,
                num_samples: int = 256,
                lr: float = 1e-3,
                weight: float = 0.01,
                beta_range: Tuple[float, float] = (20.0, 2.0),
                warmup: float = 0.2,
                seed: int = 0,
                block_types: Optional[Sequence[str]] = None,
                method: str = 'reconstruct') -> List[str]:
    """Learn the rounding of every QAT conv/linear unit by unit (see the
    module docstring) and bake it into the weights.

    Args:
        model (nn.Module): A calibrated ``MMArchitectureQuant`` or
            GraphModule (fake quants on, observers off).
        data (Tensor | Sequence[Tensor]): Preprocessed calibration inputs.
        granularity (str): ``'layer'`` or ``'block'``. Defaults to
            ``'block'``.
        drop_prob (float, optional): QDrop's probability of keeping an
            activation float inside the unit; None switches activation
            quantization inside the unit off. Defaults to None.
        iters (int): Adam steps per unit. Defaults to 200.
        batch_size (int): Samples per step. Defaults to 32.
        num_samples (int): Calibration samples cached. Defaults to 256.
        lr (float): Adam learning rate of ``alpha``. Defaults to 1e-3.
        weight (float): λ of the rounding regulariser. Defaults to 0.01.
        beta_range (tuple[float, float]): β annealed from the first to the
            second value. Defaults to (20, 2).
        warmup (float): Fraction of ``iters`` without regulariser. Defaults
            to 0.2.
        seed (int): Seed of the sample draw, the batches and the drop masks.
            Defaults to 0.
        block_types (Sequence[str], optional): Class names of the blocks.
            Defaults to None: those of the model's codebase adapters (see
            :func:`~mmrazor_quant.models.codebases.block_types_of`).
        method (str): Name used in the log. Defaults to 'reconstruct'.

    Returns:
        list[str]: The units, in the order reconstructed.

    Raises:
        ValueError: On an invalid argument or missing data.
    """
    if drop_prob is not None and not 0.0 <= float(drop_prob) <= 1.0:
        raise ValueError(f'{method}: drop_prob must be in [0, 1], got '
                         f'{drop_prob}')
    if not isinstance(iters, int) or iters < 1:
        raise ValueError(f'{method}: iters must be an int >= 1, got {iters}')
    gm = tensor_graph_module(model)
    inputs = sample_inputs(data, num_samples, seed)
    units = find_units(gm, granularity, block_types,
                       with_input_quant=granularity == 'block',
                       modules=owner_modules(model))
    logger = MMLogger.get_current_instance()
    batch_gen = torch.Generator().manual_seed(seed)
    drop_gen = torch.Generator().manual_seed(seed + 1)
    installed: List[Tuple[nn.Module, Optional[BaseFakeQuantize]]] = []
    start = time.time()
    with preserve_quant_state(gm):
        gm.eval()
        disable_observer(gm)
        enable_fake_quant(gm)
        for p in gm.parameters():
            p.requires_grad_(False)
        extracted = [extract_unit(gm, members) for _, members in units]
        # The float model does not change: all targets in one run.
        disable_fake_quant(gm)
        all_outs = list(dict.fromkeys(n for e in extracted for n in e[2]))
        float_values = dict(zip(all_outs, capture(gm, all_outs, inputs)))
        enable_fake_quant(gm)
        try:
            for i, (name, members) in enumerate(units):
                sub, in_nodes, out_nodes = extracted[i]
                quant_in = capture(gm, in_nodes, inputs)
                targets = [float_values.pop(n) for n in out_nodes]
                fake_quants = []
                for node in members:
                    module = sub.get_submodule(str(node.target)) \
                        if node.op == 'call_module' else None
                    if is_qat_module(module):
                        fq, original = _install_adaround(module)
                        installed.append((module, original))
                        fake_quants.append(fq)
                    elif isinstance(module, BaseFakeQuantize):
                        parent, _, attr = str(node.target).rpartition('.')
                        setattr(sub.get_submodule(parent), attr,
                                _UnitActivation(module, drop_prob, drop_gen))
                first, last = _optimize_unit(sub, quant_in, targets,
                                             fake_quants, iters, batch_size,
                                             lr, weight, beta_range, warmup,
                                             batch_gen)
                for fq in fake_quants:
                    fq.rounding = 'hard'
                logger.info(
                    f'PTQ {method} [{i + 1}/{len(units)}] {name}: '
                    f'{len(fake_quants)} layer(s), loss {first:.4g} -> '
                    f'{last:.4g}, {time.time() - start:.0f} s')
        finally:
            for module, original in installed:
                if module.weight_fake_quant.alpha is not None:
                    bake_rounding(module, original)
    return [name for name, _ in units]


@TASK_UTILS.register_module()
def adaround(model: nn.Module, data, iters: int = 200, **kwargs) -> List[str]:
    """AdaRound: layer-wise learned rounding (see :func:`reconstruct`;
    activation quantization of the layer itself stays as in the model, its
    input is the quantized model's)."""
    return reconstruct(model, data, granularity='layer', drop_prob=None,
                       iters=iters, method='adaround', **kwargs)


@TASK_UTILS.register_module()
def brecq(model: nn.Module, data, iters: int = 200, **kwargs) -> List[str]:
    """BRECQ: block-wise reconstruction, activation quantization off
    inside the block (see :func:`reconstruct`)."""
    return reconstruct(model, data, granularity='block', drop_prob=None,
                       iters=iters, method='brecq', **kwargs)


@TASK_UTILS.register_module()
def qdrop(model: nn.Module,
          data,
          drop_prob: float = 0.5,
          iters: int = 200,
          **kwargs) -> List[str]:
    """QDrop: block-wise reconstruction with each activation inside the
    block kept float with probability ``drop_prob`` (see
    :func:`reconstruct`)."""
    return reconstruct(model, data, granularity='block',
                       drop_prob=drop_prob, iters=iters, method='qdrop',
                       **kwargs)


for _pass in (adaround, brecq, qdrop):
    _pass.stage = 'after_calibration'
