"""Write output files all at once or not at all."""
import contextlib
import os
import os.path as osp
import tempfile
from typing import Iterator

__all__ = ['atomic_output']


@contextlib.contextmanager
def atomic_output(path: str) -> Iterator[str]:
    """Yield a temporary path beside ``path``; rename it to ``path`` only if
    the block succeeds, delete it otherwise.

    A failed export therefore never leaves a partial or stale-looking file
    where the user expects the result (an older file at ``path`` is kept).

    Args:
        path (str): The final file path; its directory is created.

    Yields:
        str: The temporary path to write to.
    """
    directory = osp.dirname(osp.abspath(path))
    os.makedirs(directory, exist_ok=True)
    fd, tmp = tempfile.mkstemp(
        prefix=f'.{osp.basename(path)}.', suffix='.tmp', dir=directory)
    os.close(fd)
    try:
        yield tmp
        os.replace(tmp, path)
    finally:
        if osp.exists(tmp):
            os.remove(tmp)
