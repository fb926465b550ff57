"""Resolve dotted paths such as ``'mmcls.models.heads.ClsHead._get_loss'``."""
import importlib
import inspect
from types import FunctionType, ModuleType
from typing import Any, Tuple

__all__ = ['resolve_dotted_path', 'resolve_method', 'qualified_name']


def _import_longest_prefix(path: str) -> Tuple[ModuleType, list]:
    """Import the longest importable module prefix of ``path``.

    Returns:
        tuple: The imported module and the remaining attribute names.

    Raises:
        ValueError: If no prefix of ``path`` is an importable module.
    """
    parts = path.split('.')
    for stop in range(len(parts), 0, -1):
        name = '.'.join(parts[:stop])
        try:
            return importlib.import_module(name), parts[stop:]
        except ModuleNotFoundError as e:
            # A missing *other* module means a broken import inside ``name``.
            if e.name is not None and not name.startswith(e.name):
                raise ValueError(
                    f'{path!r}: importing {name!r} failed: {e}') from e
    raise ValueError(f'{path!r}: no prefix of it is an importable module')


def resolve_dotted_path(path: str) -> Any:
    """Return the object named by ``path``.

    The longest importable module prefix is imported, the rest is looked up
    with ``getattr``, so ``'mmcls.models.heads.ClsHead'`` and
    ``'mmcls.models.heads.cls_head.ClsHead'`` both resolve.

    Args:
        path (str): A dotted path, e.g. ``'pkg.module.Class.method'``.

    Returns:
        Any: The object found.

    Raises:
        ValueError: If ``path`` cannot be resolved; the message names it.
    """
    if not isinstance(path, str) or not path or '.' not in path:
        raise ValueError(f'{path!r} is not a dotted path like '
                         "'pkg.module.Class.method'")
    obj, rest = _import_longest_prefix(path)
    found = '.'.join(path.split('.')[:len(path.split('.')) - len(rest)])
    for attr in rest:
        try:
            obj = getattr(obj, attr)
        except AttributeError as e:
            raise ValueError(
                f'{path!r} cannot be resolved: {found!r} has no attribute '
                f'{attr!r}') from e
        found = f'{found}.{attr}'
    return obj


def resolve_method(path: str) -> Tuple[type, str]:
    """Resolve ``'pkg.module.Class.method'`` to ``(Class, 'method')``.

    Args:
        path (str): The dotted path of a plain method defined in (or
            inherited by) a class.

    Returns:
        tuple[type, str]: The class named in ``path`` and the method name.

    Raises:
        ValueError: If ``path`` does not name a plain (non-static,
            non-class) method of a class.
    """
    if not isinstance(path, str) or path.count('.') < 2:
        raise ValueError(f'{path!r} is not a dotted path like '
                         "'pkg.module.Class.method'")
    owner_path, _, name = path.rpartition('.')
    owner = resolve_dotted_path(owner_path)
    if not inspect.isclass(owner):
        raise ValueError(f'{path!r} is not a method of a class: '
                         f'{owner_path!r} is not a class')
    try:
        attr = inspect.getattr_static(owner, name)
    except AttributeError as e:
        raise ValueError(f'{path!r} cannot be resolved: class '
                         f'{owner.__name__} has no attribute {name!r}') from e
    if not isinstance(attr, FunctionType):
        raise ValueError(f'{path!r} is not a plain method (got '
                         f'{type(attr).__name__}); only methods called on '
                         'module instances can be skipped')
    return owner, name


def qualified_name(cls: type) -> str:
    """The dotted path of ``cls``, e.g. ``'mmcls.models.heads.ClsHead'``."""
    return f'{cls.__module__}.{cls.__qualname__}'
