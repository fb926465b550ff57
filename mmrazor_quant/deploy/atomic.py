"""Write output files all at once or not at all."""
import contextlib
import os
import os.path as osp
import tempfile
from typing import Iterator, List, Sequence

__all__ = ['atomic_outputs']


@contextlib.contextmanager
def atomic_outputs(paths: Sequence[str]) -> Iterator[List[str]]:
    """Yield one temporary path beside each of ``paths``; rename them all to
    ``paths`` only if the block succeeds, delete them otherwise.

    A failed export therefore never leaves a partial file, nor a model
    without its side files, where the user expects the result.

    Args:
        paths (Sequence[str]): Final file paths; directories are created.

    Yields:
        list[str]: The temporary paths to write to, in the same order.

    Raises:
        IsADirectoryError: If a path is a directory or ends with a
            separator (nothing is created then).
    """
    for path in paths:
        if path.endswith(('/', os.sep)) or osp.isdir(path):
            raise IsADirectoryError(
                f'{path!r} is a directory; give the file to write')
    tmps = []
    try:
        for path in paths:
            directory = osp.dirname(osp.abspath(path))
            os.makedirs(directory, exist_ok=True)
            fd, tmp = tempfile.mkstemp(
                prefix=f'.{osp.basename(path)}.', suffix='.tmp',
                dir=directory)
            os.close(fd)
            tmps.append(tmp)
        yield tmps
        for tmp, path in zip(tmps, paths):
            os.replace(tmp, path)
    finally:
        for tmp in tmps:
            if osp.exists(tmp):
                os.remove(tmp)
