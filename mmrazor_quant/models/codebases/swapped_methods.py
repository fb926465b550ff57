"""Methods of classes replaced for the length of a ``with`` block."""
import contextlib
from typing import Any, Iterator, Sequence, Tuple

__all__ = ['swapped_methods']


@contextlib.contextmanager
def swapped_methods(
        rewrites: Sequence[Tuple[type, str, Any]]) -> Iterator[None]:
    """Set each ``(owner, name, replacement)`` on its class meanwhile; the
    originals come back afterwards, also after an error.

    Args:
        rewrites (Sequence[tuple]): ``(class, method name, function)``; the
            method must be defined on that class itself.
    """
    saved = []
    try:
        for owner, name, replacement in rewrites:
            saved.append((owner, name, owner.__dict__[name]))
            setattr(owner, name, replacement)
        yield
    finally:
        for owner, name, original in reversed(saved):
            setattr(owner, name, original)
