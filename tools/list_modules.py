"""List every registered backend, codebase adapter, quantizer, observer, fake
quant, loop, exporter, runtime and deploy head.

    python tools/list_modules.py [--import PACKAGE ...]

``--import`` imports user packages first (e.g. ``toy_npu``), so their
registrations are listed too.
"""
import argparse
import importlib
import inspect
from typing import Dict, List, Tuple

from mmrazor_quant.registry import (
    CODEBASES,
    DEPLOY_HEADS,
    EXPORTERS,
    LOOPS,
    MODELS,
    register_all_modules,
)


def first_line(obj) -> str:
    """The first line of ``obj``'s docstring ('' if none)."""
    doc = inspect.getdoc(obj) or ''
    return doc.strip().splitlines()[0] if doc.strip() else ''


def collect() -> Dict[str, List[Tuple[str, str]]]:
    """``{group: [(name, description), ...]}``, names sorted."""
    from mmrazor_quant.backends import all_backends
    from mmrazor_quant.models.codebases import load_adapters
    from mmrazor_quant.models.fake_quants import BaseFakeQuantize
    from mmrazor_quant.models.observers import BaseObserver
    from mmrazor_quant.models.quantizers import BaseQuantizer
    groups = {'backends': [], 'codebases': [], 'quantizers': [],
              'observers': [], 'fake quants': [], 'loops': [],
              'exporters': [], 'runtimes': [], 'deploy heads': []}
    for name, backend in sorted(all_backends().items()):
        groups['backends'].append(
            (name, f'[quantizer={backend.quantizer}, exporter='
             f'{backend.exporter}, runtime={backend.runtime}] '
             f'{first_line(type(backend))}'))
    load_adapters()
    for name, cls in sorted(CODEBASES.module_dict.items()):
        groups['codebases'].append(
            (name, f'[packages={",".join(cls.packages) or "*"}, task='
             f'{cls.task}] {first_line(cls)}'))
    kinds = (('quantizers', BaseQuantizer), ('observers', BaseObserver),
             ('fake quants', BaseFakeQuantize))
    for name, cls in sorted(MODELS.module_dict.items()):
        for group, base in kinds:
            if isinstance(cls, type) and issubclass(cls, base):
                desc = first_line(cls)
                if group == 'quantizers':
                    desc = f'[backend={cls.backend}] {desc}'
                groups[group].append((name, desc))
    for group, registry in (('loops', LOOPS), ('exporters', EXPORTERS)):
        registry.import_from_location()
        for name, cls in sorted(registry.module_dict.items()):
            groups[group].append((name, first_line(cls)))
    from mmrazor_quant.deploy.runtimes import all_runtimes
    for name, runtime in sorted(all_runtimes().items()):
        groups['runtimes'].append(
            (name, f'[quantizes_by={runtime.quantizes_by}, '
             f'accumulates_exactly={runtime.accumulates_exactly}] '
             f'{first_line(type(runtime))}'))
    DEPLOY_HEADS.import_from_location()
    for name, cls in sorted(DEPLOY_HEADS.module_dict.items()):
        groups['deploy heads'].append((name, first_line(cls)))
    return groups


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--import', dest='imports', nargs='*', default=[],
                        help='user packages to import first')
    args = parser.parse_args()
    register_all_modules(init_default_scope=False)
    for package in args.imports:
        importlib.import_module(package)
    for group, rows in collect().items():
        print(f'{group}:')
        width = max((len(n) for n, _ in rows), default=0)
        for name, desc in rows:
            print(f'  {name:<{width}}  {desc}')


if __name__ == '__main__':
    main()
