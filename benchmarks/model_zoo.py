"""The model zoo table: ``docs/model_zoo.md``, one row per family.

Each family of ``configs/model_zoo/mmcls_families.py`` goes through
:func:`mmrazor_quant.analysis.model_check.check_model` (OpenVINO W8A8,
random weights and images at the family's small input, 16 parity images):
traced, number of fake quants, QAT step, export, top-1 agreement and SQNR
of onnxruntime against the simulation, and the nudge baseline (simulation
against itself with inputs nudged by 1e-5) that random weights make the
meaningful floor for the SQNR.

Usage:
    python benchmarks/model_zoo.py [--families deit swin ...]
        [--scope mmcls|mmpretrain] [--weight-bits 8] [--out docs/model_zoo.md]

``--scope mmpretrain`` checks the same families from mmpretrain's configs
(the table's ``pretrain_config`` where mmpretrain renamed one).

``--weight-bits 7`` measures W7A8, which is what to compare on a CPU whose
int8 kernels saturate u8 x s8 pairs (no VNNI; the page says which CPU it
was measured on).

The page is written only when every requested family has run.
"""
import argparse
import os
import platform
import time

from mmengine.config import Config

from mmrazor_quant.analysis.model_check import check_model
from mmrazor_quant.deploy import int8_pairs_saturate
from mmrazor_quant.deploy.atomic import atomic_outputs

FAMILIES = 'configs/model_zoo/mmcls_families.py'
HEADER = ('| family | config | input | traced | fake quants | QAT step | '
          'export | top-1 agreement | SQNR (dB) | nudge baseline (dB) | '
          'skip needed |\n|---|---|---|---|---|---|---|---|---|---|---|')


CPU_KIND = {False: 'int8 kernels exact (VNNI)',
            True: 'int8 kernels saturate u8 x s8 pairs (no VNNI)'}
SATURATION_PARAGRAPH = (
    'On x86 CPUs without VNNI (AVX2 only), onnxruntime\'s and OpenVINO\'s '
    'int8 kernels add u8·s8 products in saturating int16, so with 8-bit '
    'weights the SQNRs drop by 10–30 dB there (VGG-11: 24.5 dB instead of '
    '39.7 dB); the zoo test then quantizes weights to 7 bits, which no CPU '
    'saturates (`check_model(..., weight_bits=7)`; docs/deploy.md, CPUs '
    'without VNNI).\n')


def _mark(status: str) -> str:
    return 'yes' if status == 'ok' else f'no: {status[:80]}'


def family_config(family: dict, scope: str) -> str:
    """The family's config path in ``scope``."""
    if scope == 'mmpretrain' and 'pretrain_config' in family:
        return family['pretrain_config']
    return family['config'].replace('mmcls::', f'{scope}::')


def row(name: str, family: dict, weight_bits: int = 8,
        scope: str = 'mmcls') -> str:
    """One table row for ``family`` from ``scope``'s config."""
    config = family_config(family, scope)
    report = check_model(config, 'openvino', family['size'],
                         family.get('model'), weight_bits=weight_bits)
    stages = report.stages
    return (f"| {name} | `{config}` | {family['size']} | "
            f"{_mark(stages.get('quantize', 'not run'))} | "
            f'{report.num_fake_quants} | '
            f"{_mark(stages.get('qat_step', 'not run'))} | "
            f"{_mark(stages.get('export', 'not run'))} | "
            f'{100 * report.top1_agreement:.0f} % | {report.sqnr_db:.1f} | '
            f'{report.nudge_sqnr_db:.1f} | none |')


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--families', nargs='+', default=None)
    parser.add_argument('--scope', default='mmcls',
                        choices=('mmcls', 'mmpretrain'))
    parser.add_argument('--weight-bits', type=int, default=8)
    parser.add_argument('--out', default='docs/model_zoo.md')
    args = parser.parse_args()
    families = Config.fromfile(FAMILIES).families
    names = args.families or list(families)
    start = time.time()
    rows = []
    for name in names:
        rows.append(row(name, families[name], args.weight_bits,
                        args.scope))
        print(rows[-1], flush=True)
    text = (
        f'# {args.scope} model zoo: capture, QAT step and deploy parity\n\n'
        'Random weights (BN statistics estimated on random images), '
        f'OpenVINO W{args.weight_bits}A8, onnxruntime against the '
        'simulation on 16 random '
        'images. With random weights many nets amplify one rounding flip, '
        'so compare the SQNR with the nudge baseline (the simulation '
        'against itself with inputs nudged by 1e-5); the zoo test asks for '
        'SQNR >= min(30, baseline - 6 dB). See docs/capture.md; why '
        'random-weight nets give low SQNRs, layer by layer: docs/deploy.md '
        '(Transformers and the model zoo). Transformers use the default '
        '(CNN) OpenVINO placement here; see docs/backends.md for '
        "`model_type='transformer'`.\n\n"
        f'{HEADER}\n' + '\n'.join(rows) + '\n\n'
        f'Machine: {platform.processor() or platform.machine()}, '
        f'{CPU_KIND[int8_pairs_saturate()]}, '
        f'{time.time() - start:.0f} s in all. Command: '
        '`python benchmarks/model_zoo.py --weight-bits '
        f'{args.weight_bits}`.\n\n' + SATURATION_PARAGRAPH)
    # keep the other codebases' tables (benchmarks/codebase_zoo.py)
    old = open(args.out).read() if os.path.exists(args.out) else ''
    if '<!-- zoo:' in old:
        text += '\n' + old[old.index('<!-- zoo:'):]
    with atomic_outputs([args.out]) as (tmp, ):
        with open(tmp, 'w') as f:
            f.write(text)


if __name__ == '__main__':
    main()
