"""Check that the codebases a config inherits from are installed.

A ``_base_`` entry such as ``'mmseg::segformer/...py'`` loads a config
shipped inside an installed codebase. mmengine fails on a scope it does not
know with a bare ``AssertionError`` and on an uninstalled codebase with a
message that names neither the config nor the entry; :func:`check_base_scopes`
walks the ``_base_`` chain first and names both, and how to install.
"""
import ast
import importlib.util
import os.path as osp
from typing import List, Optional, Set

__all__ = ['base_entries', 'check_base_scopes']

#: The codebases ``make codebases`` installs, at the versions the project
#: pins (docs/get_started.md).
MAKE_CODEBASES = ('mmseg', 'mmpose', 'mmyolo', 'mmpretrain')


def base_entries(path: str) -> List[str]:
    """The ``_base_`` entries of the config file ``path`` (a ``.py`` file's
    top-level ``_base_ = ...`` literal), in order; empty if none."""
    if not path.endswith('.py'):
        return []
    with open(path, encoding='utf-8') as f:
        tree = ast.parse(f.read(), filename=path)
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == '_base_'
                for t in node.targets):
            try:
                value = ast.literal_eval(node.value)
            except ValueError:  # not a literal: left to mmengine
                return []
            return [value] if isinstance(value, str) else list(value)
    return []


def _install_hint(scope: str, package: str) -> str:
    if scope in MAKE_CODEBASES:
        return (f'install it with `make codebases` (installs '
                f'{", ".join(MAKE_CODEBASES)} at the pinned versions) or '
                f'`pip install {package}`')
    return f'install it with `pip install {package}`'


def check_base_scopes(path: str, _seen: Optional[Set[str]] = None) -> None:
    """Raise unless every scoped ``_base_`` entry of ``path`` and of its
    local base files names an installed codebase.

    Args:
        path (str): A config file.

    Raises:
        ValueError: If an entry's scope (``mmfoo::``) is not one mmengine
            can load configs from; the message names the file, the entry and
            the scopes it knows.
        ModuleNotFoundError: If the codebase of an entry's scope is not
            installed; the message names the file, the entry and how to
            install it.
    """
    from mmengine.config.utils import MODULE2PACKAGE
    seen = set() if _seen is None else _seen
    path = osp.abspath(path)
    if path in seen or not osp.isfile(path):
        return  # a missing file is reported by the loader
    seen.add(path)
    for entry in base_entries(path):
        if '::' not in entry:
            check_base_scopes(osp.join(osp.dirname(path), entry), seen)
            continue
        scope = entry.partition('::')[0]
        where = f'config {path!r}: `_base_` entry {entry!r}'
        if scope not in MODULE2PACKAGE:
            raise ValueError(
                f'{where} names the scope {scope!r}, which mmengine cannot '
                'load configs from; known scopes: '
                f'{", ".join(sorted(MODULE2PACKAGE))}')
        if importlib.util.find_spec(scope) is None:
            package = MODULE2PACKAGE[scope]
            raise ModuleNotFoundError(
                f'{where} inherits from the codebase {scope!r} (pip package '
                f'{package!r}), which is not installed: '
                f'{_install_hint(scope, package)}', name=scope)
