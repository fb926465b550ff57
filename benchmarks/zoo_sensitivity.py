"""Where a random-weight zoo net amplifies a one-step rounding flip.

For one family of ``configs/model_zoo/mmcls_families.py`` (random weights,
BN statistics estimated on the images, OpenVINO W8A8), the same 16 images
are run with and without a nudge of 1e-5 (relative to unit-variance
inputs), through the float model and through the simulation. At every
conv/linear output (in execution order) it prints the SQNR between the two
runs, for the float net (how much it amplifies a small perturbation) and
for the simulation (where the nudge first flips a rounding and how that
flip grows). The last row is the logits: the simulation's figure there is
the zoo's "nudge baseline"; the header gives the simulation's logits SQNR
against the float model's (quantization noise). ``--init-weights`` runs
the model's own ``init_weights()`` (the initialisation training starts
from) before the BN statistics are estimated.

Usage:
    python benchmarks/zoo_sensitivity.py resnet50 [--size 64] [--rows 12]
        [--init-weights]
"""
import argparse
import copy
from typing import Dict, List, Tuple

import numpy as np
import torch
from mmengine.config import Config
from torch import nn

from mmrazor_quant.analysis.model_check import (
    NUDGE,
    build_architecture,
    calibrate_and_freeze,
    estimate_bn_stats,
    quantize_w8a8,
)
from mmrazor_quant.models.quantizers.op_kinds import (
    is_weighted_conv,
    is_weighted_linear,
)
from mmrazor_quant.utils.sqnr import sqnr_db

FAMILIES = 'configs/model_zoo/mmcls_families.py'


def layer_outputs(model: nn.Module, run, x: torch.Tensor
                  ) -> Dict[str, np.ndarray]:
    """Outputs of every conv/linear of ``model`` while ``run(x)`` runs,
    in execution order (a module called twice keeps its last output)."""
    outputs, handles = {}, []
    for name, module in model.named_modules():
        if is_weighted_conv(module) or is_weighted_linear(module):
            handles.append(module.register_forward_hook(
                lambda m, i, o, name=name: outputs.__setitem__(
                    name, o.detach().numpy())))
    try:
        with torch.no_grad():
            logits = run(x)
    finally:
        for h in handles:
            h.remove()
    outputs['logits'] = logits.detach().numpy()
    return outputs


def sensitivity(name: str, size: int, init_weights: bool = False
                ) -> Tuple[List[tuple], float]:
    """Rows ``(layer, float nudge SQNR, sim nudge SQNR)`` and the logits
    SQNR of the simulation against the float model."""
    family = Config.fromfile(FAMILIES).families[name]
    torch.manual_seed(0)
    arch = build_architecture(family['config'], family.get('model'))
    if init_weights:
        arch.init_weights()
    images = [torch.randn(16, 3, size, size) for _ in range(3)]
    estimate_bn_stats(arch, images[:2])
    fp32 = copy.deepcopy(arch).eval()
    qmodel = calibrate_and_freeze(
        quantize_w8a8(arch, 'openvino', (3, size, size), ('tensor', )),
        images[:2])
    x = images[2]
    nudged = x + NUDGE * torch.randn_like(x)

    def run_fp32(t):
        return fp32(t, mode='tensor')

    def run_sim(t):
        return qmodel(t, mode='tensor')

    f0, f1 = (layer_outputs(fp32, run_fp32, t) for t in (x, nudged))
    s0, s1 = (layer_outputs(arch, run_sim, t) for t in (x, nudged))
    rows = [(layer, sqnr_db(f0[layer], f1[layer]),
             sqnr_db(s0[layer], s1[layer])) for layer in s0 if layer in f0]
    return rows, sqnr_db(f0['logits'], s0['logits'])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('family')
    parser.add_argument('--size', type=int, default=64)
    parser.add_argument('--rows', type=int, default=12,
                        help='layers printed (evenly spaced, plus logits)')
    parser.add_argument('--init-weights', action='store_true')
    args = parser.parse_args()
    rows, quant_sqnr = sensitivity(args.family, args.size, args.init_weights)
    step = max(1, (len(rows) - 1) // (args.rows - 1))
    picked = rows[:-1][::step] + [rows[-1]]
    init = ', init_weights()' if args.init_weights else ''
    print(f'{args.family} at {args.size} px{init}, {len(rows) - 1} '
          'conv/linear layers; SQNR in dB; simulation logits vs float '
          f'logits: {quant_sqnr:.1f} dB')
    print('| # | layer | float: nudged vs not | simulation: nudged vs not '
          '|\n|---|---|---|---|')
    for row in picked:
        layer, f, s = row
        print(f'| {rows.index(row) + 1} | {layer} | {f:.1f} | {s:.1f} |')


if __name__ == '__main__':
    main()
