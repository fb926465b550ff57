"""A generated data folder that appears whole or not at all."""
import contextlib
import os
import os.path as osp
import shutil
import tempfile
from typing import Iterator

__all__ = ['atomic_folder']


@contextlib.contextmanager
def atomic_folder(root: str, prefix: str) -> Iterator[str]:
    """Yield a temporary folder next to ``root`` to fill; on success it
    replaces ``root`` (an incomplete earlier attempt there is removed), on
    an error it is deleted.

    Args:
        root (str): The folder to write.
        prefix (str): Name prefix of the temporary folder.
    """
    parent = osp.dirname(osp.abspath(root))
    os.makedirs(parent, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix=prefix, dir=parent)
    try:
        yield tmp
        if osp.isdir(root):  # an incomplete earlier attempt
            shutil.rmtree(root)
        os.replace(tmp, root)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
