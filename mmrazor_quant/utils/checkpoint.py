"""Let ``torch.load(weights_only=True)`` read mmengine's own checkpoints.

Since torch 2.6, ``torch.load`` defaults to ``weights_only=True``: the
unpickler only builds tensors, containers and the globals allowlisted with
:func:`torch.serialization.add_safe_globals`. mmengine 0.10.7 calls
``torch.load`` without ``weights_only`` in ``load_checkpoint`` (used by
``load_from``, ``--resume`` and ``tools/test.py``), and the checkpoints its
``CheckpointHook`` writes hold more than tensors: the message hub's
``HistoryBuffer`` objects, numpy arrays and scalars inside them, and the
buffer's statistics methods, pickled as ``getattr(HistoryBuffer, 'min')``.

:func:`register_checkpoint_safe_globals` allowlists exactly these, instead
of switching ``weights_only`` off (which would run any code a checkpoint
carries). ``builtins.getattr`` in particular is *not* allowlisted: with it a
pickle could walk from any allowed object to ``eval``. Its name is bound to
:func:`_history_buffer_getattr`, which only returns the four statistics
methods of ``HistoryBuffer`` and refuses everything else.
"""
from pickle import UnpicklingError
from typing import Any, Callable, List, Tuple, Union

import numpy as np
import torch
from mmengine.logging import HistoryBuffer

__all__ = [
    'checkpoint_safe_globals', 'register_checkpoint_safe_globals',
    'read_checkpoint'
]

SafeGlobal = Union[Callable, Tuple[Callable, str]]

# The methods HistoryBuffer puts into its pickled state (its
# ``_set_default_statistics``).
_HISTORY_BUFFER_METHODS = ('min', 'max', 'current', 'mean')

# dtypes that logged values and observer statistics use. Object arrays stay
# refused: their elements could be anything.
_NUMPY_DTYPES = (np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8,
                 np.uint16, np.uint32, np.uint64, np.float16, np.float32,
                 np.float64)


def _history_buffer_getattr(obj: Any, name: str) -> Callable:
    """Stand-in for ``builtins.getattr`` while unpickling a checkpoint.

    Args:
        obj (Any): The object whose attribute the pickle asks for.
        name (str): The attribute name.

    Returns:
        Callable: ``HistoryBuffer.<name>`` for one of its statistics methods.

    Raises:
        UnpicklingError: For any other object or attribute.
    """
    if obj is HistoryBuffer and name in _HISTORY_BUFFER_METHODS:
        return getattr(HistoryBuffer, name)
    raise UnpicklingError(
        f'The checkpoint asks for getattr({obj!r}, {name!r}); only '
        f'HistoryBuffer.{{{", ".join(_HISTORY_BUFFER_METHODS)}}} are allowed '
        'with weights_only=True. Load only checkpoints you trust with '
        'weights_only=False.')


def _numpy_globals() -> List[Callable]:
    """The numpy functions and types that pickled arrays and scalars use."""
    # numpy 2 moved the private module from numpy.core to numpy._core.
    try:
        from numpy._core import multiarray
    except ImportError:  # numpy < 2
        from numpy.core import multiarray
    dtype_classes = [type(np.dtype(t)) for t in _NUMPY_DTYPES]
    return [multiarray._reconstruct, multiarray.scalar, np.ndarray, np.dtype
            ] + dtype_classes


def checkpoint_safe_globals() -> List[SafeGlobal]:
    """The globals an mmengine checkpoint needs under ``weights_only=True``.

    Returns:
        list: Entries for :func:`torch.serialization.add_safe_globals` or the
        :func:`torch.serialization.safe_globals` context manager.
    """
    return [HistoryBuffer, (_history_buffer_getattr, 'builtins.getattr')
            ] + _numpy_globals()


def register_checkpoint_safe_globals() -> None:
    """Allowlist mmengine's checkpoint contents for ``torch.load``.

    Call it once before a runner loads a checkpoint (``load_from``,
    ``resume``); ``tools/train.py`` and ``tools/test.py`` do. It changes
    only torch's allowlist, is idempotent, and keeps ``weights_only=True``.

    Examples:
        >>> from mmrazor_quant.utils import register_checkpoint_safe_globals
        >>> register_checkpoint_safe_globals()
        >>> ckpt = torch.load('work_dirs/x/epoch_1.pth')  # doctest: +SKIP
    """
    torch.serialization.add_safe_globals(checkpoint_safe_globals())


def read_checkpoint(path: str, what: str = 'checkpoint') -> Any:
    """Read a checkpoint with mmengine's loader, explaining a bad file.

    torch reports a damaged file as ``OSError: Invalid argument``,
    ``IndexError: pop from empty list`` or ``EOFError``, or advises to retry
    with ``weights_only=False``: wrong advice for a damaged file and unsafe
    for an untrusted one. This names the file instead.

    Args:
        path (str): The checkpoint (a local path or an mmengine URI).
        what (str): How the message names it (e.g. ``'load_from'``).
            Defaults to ``'checkpoint'``.

    Returns:
        Any: What the file holds (a dict for mmengine checkpoints).

    Raises:
        FileNotFoundError: If ``path`` does not exist.
        ValueError: If the file is corrupt or truncated, or holds Python
            objects other than weights.
    """
    from mmengine.runner.checkpoint import CheckpointLoader
    register_checkpoint_safe_globals()
    try:
        return CheckpointLoader.load_checkpoint(path, map_location='cpu')
    except FileNotFoundError:
        raise
    except UnpicklingError as e:
        if 'Unsupported global' in str(e):
            found = next((line.strip() for line in str(e).splitlines()
                          if 'Unsupported global' in line), '')
            raise ValueError(
                f'{what} {path!r} holds Python objects other than weights, '
                f'which are not loaded ({found}); export its state_dict '
                'with torch.save from code you trust') from None
        # torch's text here is the advice to retry unsafely: leave it out.
        raise _corrupt(path, what, 'UnpicklingError') from None
    except (RuntimeError, OSError, EOFError, IndexError, KeyError,
            ValueError) as e:
        reason = (str(e).splitlines() or [''])[0][:120]
        raise _corrupt(path, what, f'{type(e).__name__}: {reason}') from None


def _corrupt(path: str, what: str, reason: str) -> ValueError:
    return ValueError(
        f'{what} {path!r} is corrupt or truncated: torch cannot read it '
        f'({reason}); write or download it again')
