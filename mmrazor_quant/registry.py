"""Registries of mmrazor_quant, children of mmengine's root registries.

Every registry has the scope ``mmrazor_quant`` so that configs may name a
module as ``type='mmrazor_quant.OpenVINOQuantizer'`` (or, after
``default_scope='mmrazor_quant'``, just ``'OpenVINOQuantizer'``). The
``locations`` make a lookup import the defining package on demand, so a name
resolves whatever was imported before. The modules that need an OpenMMLab
codebase (its adapter, our datasets built on it) are not in those packages'
imports: looking their name up imports them
(:mod:`mmrazor_quant.utils.codebase_imports`).
"""
from mmengine.registry import DATASETS as MMENGINE_DATASETS
from mmengine.registry import LOOPS as MMENGINE_LOOPS
from mmengine.registry import MODEL_WRAPPERS as MMENGINE_MODEL_WRAPPERS
from mmengine.registry import MODELS as MMENGINE_MODELS
from mmengine.registry import TASK_UTILS as MMENGINE_TASK_UTILS
from mmengine.registry import TRANSFORMS as MMENGINE_TRANSFORMS
from mmengine.registry import Registry as _MMEngineRegistry

__all__ = [
    'MODELS', 'MODEL_WRAPPERS', 'TASK_UTILS', 'LOOPS', 'DATASETS',
    'TRANSFORMS', 'BACKENDS', 'EXPORTERS', 'RUNTIMES', 'CODEBASES',
    'DEPLOY_HEADS', 'register_all_modules', 'build_in_scope'
]


class Registry(_MMEngineRegistry):
    """mmengine's registry that imports a lazily registered name's module
    (a codebase adapter, a dataset on a codebase) when the name is looked
    up in it, with a clear error if its codebase is not installed."""

    def get(self, key: str):
        if isinstance(key, str):
            scope, name = self.split_scope_key(key)
            if scope in (None, self._scope) and name not in self._module_dict:
                from mmrazor_quant.utils.codebase_imports import (
                    import_lazy_name,
                )
                import_lazy_name(name, f'{self.name} {key!r}')
        return super().get(key)


# Algorithms, quantizers, observers, fake quants and QAT modules.
MODELS = Registry(
    'model',
    parent=MMENGINE_MODELS,
    locations=['mmrazor_quant.models', 'mmrazor_quant.frontends'])
# DDP wrappers of the algorithms.
MODEL_WRAPPERS = Registry(
    'model_wrapper',
    parent=MMENGINE_MODEL_WRAPPERS,
    locations=['mmrazor_quant.models'])
# Tracers and other helpers built from config.
TASK_UTILS = Registry(
    'task util',
    parent=MMENGINE_TASK_UTILS,
    locations=['mmrazor_quant.models'])
# Codebase adapters: what is specific to mmcls, mmdet, ... (which models,
# example input shape, tracer rewrites and skips, data samples, task).
CODEBASES = Registry('codebase', locations=['mmrazor_quant.models'])
# Deploy heads, one per task: where the exported graph ends and how its
# outputs are compared with the simulation.
DEPLOY_HEADS = Registry('deploy head', locations=['mmrazor_quant.deploy'])
# PTQ / QAT loops.
LOOPS = Registry(
    'loop', parent=MMENGINE_LOOPS, locations=['mmrazor_quant.engine'])
# Datasets (the embedded MNIST digits).
DATASETS = Registry(
    'dataset', parent=MMENGINE_DATASETS, locations=['mmrazor_quant.datasets'])
# Data transforms.
TRANSFORMS = Registry(
    'transform',
    parent=MMENGINE_TRANSFORMS,
    locations=['mmrazor_quant.datasets'])
# Backend plugins: one per deploy target, naming its quantizer, exporter
# and parity runtime (see mmrazor_quant.backends).
BACKENDS = Registry('backend', locations=['mmrazor_quant.backends'])
# Exporters: the file format of each deploy target.
EXPORTERS = Registry('exporter', locations=['mmrazor_quant.deploy'])
# Runtimes that run an exported file for the parity check.
RUNTIMES = Registry('runtime', locations=['mmrazor_quant.deploy'])


def register_all_modules(init_default_scope: bool = True) -> None:
    """Import the modules of mmrazor_quant so that its names are registered.

    The modules of an OpenMMLab codebase (its adapter, our datasets built on
    it) are left out: a registry imports them when a config or a model names
    the codebase (:mod:`mmrazor_quant.utils.codebase_imports`), so that no
    tool pays for, or needs, the codebases it does not use. So is
    ``mmrazor_quant.deploy``, which its own registries import on their
    first lookup.

    Args:
        init_default_scope (bool): Whether to set ``mmrazor_quant`` as the
            default scope of mmengine's ``DefaultScope``. Defaults to True.
    """
    import importlib

    from mmengine.registry import DefaultScope

    # Not ``mmrazor_quant.deploy`` (ONNX and the exporters): its registries
    # (EXPORTERS, RUNTIMES, DEPLOY_HEADS) import it on their first lookup,
    # which a tool that does not export never makes.
    for package in ('mmrazor_quant.backends', 'mmrazor_quant.models',
                    'mmrazor_quant.frontends',
                    'mmrazor_quant.engine', 'mmrazor_quant.datasets',
                    'mmrazor_quant.ptq'):
        try:
            importlib.import_module(package)
        except ModuleNotFoundError as e:
            # Only tolerate the package itself being absent, never a broken
            # import inside it.
            if e.name != package:
                raise
    if init_default_scope:
        never_created = DefaultScope.get_current_instance() is None or \
            not DefaultScope.check_instance_created('mmrazor_quant')
        if never_created:
            DefaultScope.get_instance(
                'mmrazor_quant', scope_name='mmrazor_quant')


def build_in_scope(registry: Registry, cfg: dict, **kwargs):
    """Build ``cfg`` from ``registry`` with ``mmrazor_quant`` as the default
    scope, so an unprefixed ``type`` means our module even when the runner's
    default scope is another package's (e.g. ``mmcls``).
    """
    from mmengine.registry import DefaultScope
    with DefaultScope.overwrite_default_scope('mmrazor_quant'):
        return registry.build(cfg, **kwargs)
