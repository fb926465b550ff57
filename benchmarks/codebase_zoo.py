"""The mmseg, mmpose, mmyolo and mmdet model zoo tables of
``docs/model_zoo.md``, one per codebase, one row per family.

Each family of ``configs/model_zoo/<codebase>_families.py`` goes through
:func:`mmrazor_quant.analysis.zoo_check.check_zoo_config`: the config as
the codebase ships it (SyncBN -> BN, pretrained weights removed), random
weights with BN statistics drawn as training leaves them, every mode
traced with OpenVINO's W8A8 scheme, calibrated, predict and a training
step on the adapter's data samples, exported, and the export run in
OpenVINO and onnxruntime against the simulation. The families run one at
a time (one process, the machine's threads).

Usage:
    python benchmarks/codebase_zoo.py mmseg [--families unet fcn ...]
        [--weight-bits 8] [--out docs/model_zoo.md]

The codebase's section of ``--out`` (between its ``<!-- zoo:NAME -->``
markers, appended if missing) is replaced when every family has run; the
rest of the page is kept. With ``--families``, each family's row is
written as soon as it is measured and the rows of the other families
already in the section are kept (each row carries the date it was
measured on), so the zoo can be measured a few families at a time on a
shared machine.
"""
import argparse
import datetime
import math
import os
import platform
import re
import time

from mmengine.config import Config

from mmrazor_quant.analysis.zoo_check import check_zoo_config
from mmrazor_quant.deploy import int8_pairs_saturate
from mmrazor_quant.deploy.atomic import atomic_outputs

HEADER = ('| family | config | input | fake quants | Q/DQ | training step | '
          'OpenVINO SQNR (dB) | onnxruntime SQNR (dB) | agreement '
          '(OpenVINO / onnxruntime) | status | measured |\n'
          '|---|---|---|---|---|---|---|---|---|---|---|')
AGREEMENT = {'mmseg': 'pixels labelled alike',
             'mmpose': 'keypoints within 0.5 px',
             'mmyolo': 'boxes reproduced', 'mmdet': 'boxes reproduced'}
MIN_SQNR_DB = 30.


def _status(report, family: dict) -> str:
    if not report.passed:
        stage = report.failed_stage
        error = report.stages.get(stage, 'not run')
        if 'refused' in family:  # the adapter's whole error, not its site
            error = re.sub(r' \([^()]*:\d+\)$', '', error)
            return f'refused, {stage}: {error}'.replace('|', '/')
        return f'{stage}: {error[:160]}'.replace('|', '/')
    floor = family.get('min_sqnr_db', MIN_SQNR_DB)
    low = [r for r, v in report.sqnr_db.items() if v < floor]
    measured = ('' if math.isnan(report.float64_floor_db) else
                ' (the simulation in float32 against float64: '
                f'{report.float64_floor_db:.1f} dB)')
    if low:
        return (f"below {floor:.0f} dB in {', '.join(low)}: "
                + family.get('why', 'not understood') + measured)
    if 'why' in family:
        return f"ok (>= {floor:.0f} dB: {family['why']}){measured}"
    return 'ok'


def _dB(report, runtime: str) -> str:
    value = report.sqnr_db.get(runtime)
    return '-' if value is None else f'{value:.1f}'


def row(name: str, family: dict, weight_bits: int) -> str:
    """One table row for ``family``."""
    start = time.time()
    report = check_zoo_config(family['config'], tuple(family['hw']),
                              weight_bits=weight_bits)
    agree = ' / '.join(
        f'{100 * report.agreement[r]:.0f} %' if r in report.agreement
        else '-' for r in ('openvino', 'onnxruntime'))
    step = (f'{report.qat_loss:.3g}' if report.stages.get('qat_step') == 'ok'
            else 'no')
    h, w = family['hw']
    return (f"| {name} | `{family['config']}` | {h}x{w} | "
            f'{report.num_fake_quants} | {report.num_q} | {step} | '
            f"{_dB(report, 'openvino')} | {_dB(report, 'onnxruntime')} | "
            f'{agree} | {_status(report, family)} | '
            f'{datetime.date.today().isoformat()}, '
            f'{time.time() - start:.0f} s |')


def section(codebase: str, rows: list, seconds: float,
            weight_bits: int) -> str:
    """The codebase's section of the page, between its markers."""
    cpu = ('int8 kernels saturate u8 x s8 pairs (no VNNI)'
           if int8_pairs_saturate() else 'int8 kernels exact (VNNI)')
    return (
        f'<!-- zoo:{codebase} -->\n## {codebase}\n\n'
        f"{codebase}'s own configs as shipped (SyncBN -> BN, pretrained "
        'weights removed), random weights with BN statistics drawn as '
        f'training leaves them, OpenVINO W{weight_bits}A8, every mode '
        'traced with the adapter\'s rewrites and no hand-written skip; '
        'SQNR of each runtime\'s outputs against the simulation on 2 '
        f'random images (lowest over the outputs); agreement: '
        f'{AGREEMENT[codebase]}. Families below 30 dB name the op that '
        'departs.\n\n'
        f'{HEADER}\n' + '\n'.join(rows) + '\n\n'
        f'Last run {datetime.date.today().isoformat()}, '
        f'{platform.processor() or platform.machine()} ({cpu}, '
        f'{os.cpu_count()} cores shared with other jobs; each row\'s '
        'wall time in its last column). Command: `python benchmarks/'
        f'codebase_zoo.py {codebase}` (`--families ...` for some).'
        f'\n<!-- /zoo:{codebase} -->\n')


def merged_rows(text: str, codebase: str, rows: list,
                order: list) -> list:
    """``rows`` with the section's rows of the families not in them, in
    the order of ``order`` (the families file)."""
    pattern = re.compile(f'<!-- zoo:{codebase} -->.*?<!-- /zoo:'
                         f'{codebase} -->', re.S)
    found = pattern.search(text)
    by_name = {}
    for line in (found.group(0).splitlines() if found else []):
        cells = line.split('|')
        if len(cells) > 2 and cells[1].strip() in order:
            by_name[cells[1].strip()] = line
    by_name.update({r.split('|')[1].strip(): r for r in rows})
    return [by_name[n] for n in order if n in by_name]


def replace_section(text: str, codebase: str, new: str) -> str:
    """``text`` with ``codebase``'s marked section replaced (appended if
    it has none)."""
    pattern = re.compile(f'<!-- zoo:{codebase} -->.*?<!-- /zoo:'
                         f'{codebase} -->\n', re.S)
    if pattern.search(text):
        return pattern.sub(lambda _: new, text)
    return text.rstrip('\n') + '\n\n' + new


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('codebase',
                        choices=('mmseg', 'mmpose', 'mmyolo', 'mmdet'))
    parser.add_argument('--families', nargs='+', default=None)
    parser.add_argument('--weight-bits', type=int, default=8)
    parser.add_argument('--out', default='docs/model_zoo.md')
    args = parser.parse_args()
    families = Config.fromfile(
        f'configs/model_zoo/{args.codebase}_families.py').families
    start = time.time()
    rows = []
    for name in args.families or list(families):
        rows.append(row(name, families[name], args.weight_bits))
        print(rows[-1], flush=True)
        if args.families:  # each row kept as soon as it is measured
            write(args, rows, list(families), time.time() - start)
    if not args.families:
        write(args, rows, list(families), time.time() - start)


def write(args, rows: list, order: list, seconds: float) -> None:
    """``rows`` into ``args.codebase``'s section of ``args.out``."""
    text = open(args.out).read() if os.path.exists(args.out) else ''
    if args.families:
        rows = merged_rows(text, args.codebase, rows, order)
    new = section(args.codebase, rows, seconds, args.weight_bits)
    with atomic_outputs([args.out]) as (tmp, ):
        with open(tmp, 'w') as f:
            f.write(replace_section(text, args.codebase, new))

if __name__ == '__main__':
    main()
