"""The error a failed trace raises, and how it finds where it failed."""
import inspect
from dataclasses import dataclass
from types import CodeType, FrameType, TracebackType
from typing import Dict, Iterator, List, Optional

from torch import nn

from .path_utils import qualified_name

__all__ = ['TraceError', 'FailureSite', 'locate_failure', 'format_failure']


class TraceError(RuntimeError):
    """Symbolic tracing of a model failed.

    The message names the module (its path in the model and its class) and
    the method that was being traced, and suggests the ``CustomTracer``
    entry that keeps that call out of the graph. The original exception is
    chained as ``__cause__``.
    """


@dataclass(frozen=True)
class FailureSite:
    """Where a trace failed.

    Args:
        path (str): Qualified name of the module in the traced model
            (``''`` for the model itself).
        module (nn.Module): The module.
        owner (type): The class that defines ``method``.
        method (str): Name of the method being traced.
        location (str): ``file:line`` of the failing line in ``method``.
            Defaults to ``''`` (unknown).
    """
    path: str
    module: nn.Module
    owner: type
    method: str
    location: str = ''


def _frames(exc: BaseException) -> Iterator[FrameType]:
    """Frames of ``exc``'s traceback, innermost first."""
    frames: List[FrameType] = []
    tb: Optional[TracebackType] = exc.__traceback__
    while tb is not None:
        frames.append(tb.tb_frame)
        tb = tb.tb_next
    return reversed(frames)


def _defining_class(module: nn.Module, code: CodeType) -> Optional[type]:
    """The class in ``module``'s MRO whose method has code ``code``."""
    for cls in type(module).__mro__:
        if cls is nn.Module:
            # Its __call__ machinery is never what the user should skip.
            return None
        attr = cls.__dict__.get(code.co_name)
        if attr is None:
            continue
        func = inspect.unwrap(getattr(attr, '__func__', attr))
        if getattr(func, '__code__', None) is code:
            return cls
    return None


def locate_failure(
        exc: BaseException,
        root: nn.Module,
        fallback: Optional[nn.Module] = None) -> Optional[FailureSite]:
    """Find the innermost method of a module of ``root`` that ``exc`` left.

    The traceback is searched, innermost frame first, for a method whose
    ``self`` is a module of ``root``; this names helper methods such as
    ``ClsHead._get_loss`` that no module stack records.

    Args:
        exc (BaseException): The exception raised while tracing.
        root (nn.Module): The traced model.
        fallback (nn.Module, optional): The innermost module the tracer was
            calling, used (with ``forward``) if no frame matches. Defaults
            to None.

    Returns:
        FailureSite, optional: The site, or None if nothing matched.
    """
    paths: Dict[int, str] = {id(m): n for n, m in root.named_modules()}
    for frame in _frames(exc):
        module = frame.f_locals.get('self')
        if not isinstance(module, nn.Module) or id(module) not in paths:
            continue
        owner = _defining_class(module, frame.f_code)
        if owner is not None:
            location = f'{frame.f_code.co_filename}:{frame.f_lineno}'
            return FailureSite(paths[id(module)], module, owner,
                               frame.f_code.co_name, location)
    if fallback is not None and id(fallback) in paths:
        owner = next(c for c in type(fallback).__mro__
                     if 'forward' in c.__dict__)
        return FailureSite(paths[id(fallback)], fallback, owner, 'forward')
    return None


def _suggestion(site: FailureSite) -> str:
    """The config entries that keep ``site`` out of the graph."""
    if site.path == '':
        return ('Methods of the traced model itself cannot be skipped: '
                'specialise its non-tensor arguments with `concrete_args` '
                "(`trace_mode(model, 'loss')` does so for `mode`), or move "
                'the untraceable code into a method of a submodule and add '
                'that method to `skipped_methods`.')
    entries = [
        f"skipped_methods=['{qualified_name(site.owner)}."
        f"{site.method}']"
    ]
    if site.method == 'forward':
        entries += [
            f"skipped_module_classes=['{type(site.module).__name__}']",
            f"skipped_module_names=['{site.path}']"
        ]
    return ('Keep this call out of the graph (it then runs as one opaque '
            'node) by adding to the CustomTracer config: ' +
            ' or '.join(entries))


def format_failure(exc: BaseException, what: str,
                   site: Optional[FailureSite]) -> str:
    """The message of the :class:`TraceError` raised for ``exc``.

    Args:
        exc (BaseException): The original exception.
        what (str): What was being traced, e.g.
            ``"ImageClassifier.forward(mode='loss')"``.
        site (FailureSite, optional): Where it failed.

    Returns:
        str: The message.
    """
    cause = f'{type(exc).__name__}: {exc}'
    if site is None:
        return f'Failed to trace {what}: {cause}'
    where = f"module '{site.path}'" if site.path else 'the model itself'
    at = f' at {site.location}' if site.location else ''
    return (f'Failed to trace {what}: {where} '
            f'({type(site.module).__name__}) failed in '
            f'{site.owner.__name__}.{site.method}{at}: {cause}\n'
            f'{_suggestion(site)}')
