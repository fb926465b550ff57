"""Set one attribute on a group of objects for the length of a block."""
from contextlib import contextmanager
from typing import Any, Iterable, Iterator, List

__all__ = ['attribute_set']


@contextmanager
def attribute_set(objects: Iterable[Any], name: str,
                  value: Any) -> Iterator[List[Any]]:
    """Within the block, ``obj.<name> = value`` on every object; after it
    (an exception included), each object's own value again.

    Args:
        objects (Iterable): The objects (e.g. a model's modules of a type).
        name (str): The attribute.
        value (Any): Its value within the block.

    Yields:
        list: The objects.
    """
    objects = list(objects)
    before = [getattr(obj, name) for obj in objects]
    for obj in objects:
        setattr(obj, name, value)
    try:
        yield objects
    finally:
        for obj, old in zip(objects, before):
            setattr(obj, name, old)
