"""Import a codebase's modules only when a config or a model names it.

Each OpenMMLab codebase (mmcls, mmdet, ...) brings its own adapter
(``models/codebases/``) and, for some, a dataset of ours that subclasses one
of the codebase's (``datasets/``). ``register_all_modules()`` imports none of
them: the registries import a module when its name is looked up
(:data:`LAZY_NAMES`), :func:`import_config_codebases` imports those of every
codebase a config names, and the adapter lookup those of the packages in a
model's class hierarchy. A codebase that is not installed is reported with
the config key that names it and the extra that installs it.
"""
import importlib
import importlib.util
import re
from dataclasses import dataclass
from typing import Any, Dict, Iterator, List, Optional, Tuple

__all__ = [
    'CodebaseModules', 'CODEBASE_MODULES', 'LAZY_NAMES', 'install_hint',
    'import_codebase', 'import_lazy_name', 'import_config_codebases',
    'codebases_named_by', 'CodebaseNotInstalledError'
]

_ADAPTERS = 'mmrazor_quant.models.codebases.'
_DATASETS = 'mmrazor_quant.datasets.'


@dataclass(frozen=True)
class CodebaseModules:
    """What one codebase brings into mmrazor_quant.

    Attributes:
        package (str): Its import name (and config scope), e.g. ``'mmseg'``.
        distribution (str): Its name on PyPI, e.g. ``'mmsegmentation'``.
        adapter (str): Our module with its adapter (imports nothing of the
            codebase itself).
        modules (tuple[str]): Our modules that import the codebase (datasets
            subclassing its base classes).
    """
    package: str
    distribution: str
    adapter: str
    modules: Tuple[str, ...] = ()

    @property
    def extra(self) -> str:
        """The extra of ``mmrazor_quant`` that installs it."""
        return self.package


#: Every codebase with an adapter, by import name (= config scope).
CODEBASE_MODULES: Dict[str, CodebaseModules] = {
    c.package: c
    for c in (
        CodebaseModules('mmcls', 'mmcls', _ADAPTERS + 'mmcls',
                        (_DATASETS + 'mnist5k', )),
        CodebaseModules('mmdet', 'mmdet', _ADAPTERS + 'mmdet',
                        (_DATASETS + 'digit_canvas_dataset', )),
        CodebaseModules('mmseg', 'mmsegmentation', _ADAPTERS + 'mmseg',
                        (_DATASETS + 'seg_digits', )),
        CodebaseModules('mmpose', 'mmpose', _ADAPTERS + 'mmpose',
                        (_DATASETS + 'pose_digits', )),
        CodebaseModules('mmyolo', 'mmyolo', _ADAPTERS + 'mmyolo'),
        CodebaseModules('mmpretrain', 'mmpretrain',
                        _ADAPTERS + 'mmpretrain'),
    )
}

#: Registered names of ours that live in a lazily imported module:
#: ``name -> (module, package it needs)``. A registry lookup of the name
#: imports the module (``tests/test_utils/test_codebase_imports.py`` checks
#: that every name those modules register is listed).
LAZY_NAMES: Dict[str, Tuple[str, str]] = {
    'MNIST5k': (_DATASETS + 'mnist5k', 'mmcls'),
    'DigitCanvasCocoDataset': (_DATASETS + 'digit_canvas_dataset', 'mmdet'),
    'DigitCanvasSegDataset': (_DATASETS + 'seg_digits', 'mmseg'),
    'PoseDigitsDataset': (_DATASETS + 'pose_digits', 'mmpose'),
    'GrayToRGB': (_DATASETS + 'transforms', 'mmcv'),
    'CalibrationFolderDataset': (_DATASETS + 'calibration_folder', ''),
    # The adapters import nothing of their codebase.
    'MMClsCodebase': (_ADAPTERS + 'mmcls', ''),
    'MMDetCodebase': (_ADAPTERS + 'mmdet', ''),
    'MMSegCodebase': (_ADAPTERS + 'mmseg', ''),
    'MMPoseCodebase': (_ADAPTERS + 'mmpose', ''),
    'MMYOLOCodebase': (_ADAPTERS + 'mmyolo', ''),
    'MMPretrainCodebase': (_ADAPTERS + 'mmpretrain', ''),
}


class CodebaseNotInstalledError(ModuleNotFoundError):
    """A config or model needs a codebase that is not installed."""


def install_hint(package: str) -> str:
    """How to install ``package`` (a codebase or mmcv) for mmrazor_quant."""
    if package in CODEBASE_MODULES:
        return f"pip install 'mmrazor_quant[{package}]'"
    if package == 'mmcv':
        return ("pip install 'mmrazor_quant[mmcls]' (every codebase extra "
                'installs mmcv; `make venv` installs all of them)')
    return f'pip install {package}'


def _installed(package: str) -> bool:
    return importlib.util.find_spec(package) is not None


def _not_installed(package: str, where: str) -> CodebaseNotInstalledError:
    err = CodebaseNotInstalledError(
        f'{where} needs {package}, which is not installed: '
        f'{install_hint(package)}')
    err.name = package
    return err


def import_codebase(package: str, where: str) -> None:
    """Import our modules of the codebase ``package`` (its adapter and the
    datasets of ours built on it).

    Args:
        package (str): A key of :data:`CODEBASE_MODULES`, e.g. ``'mmdet'``.
        where (str): What names it, for the error (e.g. ``"config key
            `default_scope` ('mmdet')"``).

    Raises:
        CodebaseNotInstalledError: If the codebase is not installed; the
            message names ``where`` and the extra to install.
    """
    codebase = CODEBASE_MODULES[package]
    if not _installed(package):
        raise _not_installed(package, where)
    importlib.import_module(codebase.adapter)
    for module in codebase.modules:
        importlib.import_module(module)


def import_lazy_name(name: str, where: Optional[str] = None) -> bool:
    """Import the module that registers ``name`` if it is one of
    :data:`LAZY_NAMES`; False if it is not.

    Raises:
        CodebaseNotInstalledError: If the module needs a package that is
            not installed.
    """
    if name not in LAZY_NAMES:
        return False
    module, package = LAZY_NAMES[name]
    if package and not _installed(package):
        raise _not_installed(package, where or f'{name!r}')
    importlib.import_module(module)
    return True


def _split_type(value: str) -> Tuple[Optional[str], str]:
    scope, dot, name = value.rpartition('.')
    return (scope or None, name) if dot and '.' not in scope else (None,
                                                                   value)


def _walk(node: Any, path: str) -> Iterator[Tuple[str, Any]]:
    if isinstance(node, dict):
        for key, value in node.items():
            sub = f'{path}.{key}' if path else str(key)
            yield sub, value
            yield from _walk(value, sub)
    elif isinstance(node, (list, tuple)):
        for index, value in enumerate(node):
            sub = f'{path}[{index}]'
            yield sub, value
            yield from _walk(value, sub)


def codebases_named_by(cfg: Any) -> List[Tuple[str, str, str]]:
    """Every codebase (or mmcv) a config names, with where it is named.

    A codebase is named by ``default_scope``, a ``_scope_``, a ``type`` with
    its scope (``'mmdet.RetinaNet'``), a ``type`` of ours that lives on it
    (``'mmrazor_quant.MNIST5k'`` needs mmcls) or a module of it in
    ``custom_imports``.

    Args:
        cfg: An mmengine ``Config`` or a plain dict.

    Returns:
        list[tuple[str, str, str]]: ``(package, config key, value)``, in the
        order found; a package may appear more than once.
    """
    found = []
    root = cfg.to_dict() if hasattr(cfg, 'to_dict') else cfg
    for key, value in _walk(root, ''):
        if not isinstance(value, str):
            continue
        leaf = key.rsplit('.', 1)[-1]
        if re.fullmatch(r'custom_imports\.imports\[\d+\]', key):
            package = value.split('.')[0]
            if package in CODEBASE_MODULES or package == 'mmcv':
                found.append((package, key, value))
        elif leaf in ('default_scope', '_scope_'):
            if value in CODEBASE_MODULES:
                found.append((value, key, value))
        elif leaf == 'type':
            scope, name = _split_type(value)
            if scope in CODEBASE_MODULES:
                found.append((scope, key, value))
            elif scope in (None, 'mmrazor_quant') and name in LAZY_NAMES:
                package = LAZY_NAMES[name][1]
                if package:
                    found.append((package, key, value))
    return found


def import_config_codebases(cfg: Any) -> List[str]:
    """Import the modules of every codebase ``cfg`` names (see
    :func:`codebases_named_by`), and the lazily registered names it uses.

    Returns:
        list[str]: The packages imported for, in order.

    Raises:
        CodebaseNotInstalledError: For the first named codebase that is not
            installed; the message names its config key and the extra.
    """
    done: List[str] = []
    for package, key, value in codebases_named_by(cfg):
        where = f'config key `{key}` ({value!r})'
        if package in CODEBASE_MODULES:
            if package not in done:
                import_codebase(package, where)
                done.append(package)
        elif not _installed(package):
            raise _not_installed(package, where)
        if key.endswith('type'):
            import_lazy_name(_split_type(value)[1], where)
    return done
