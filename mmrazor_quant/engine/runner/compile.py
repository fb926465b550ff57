"""``torch.compile`` for the quantization loops.

mmengine's Runner reads the config's ``compile`` option (``True`` or the
keyword arguments of :func:`torch.compile`) and compiles only
``model.train_step``. :func:`compile_steps` compiles the other steps our
loops run (``val_step``, ``test_step``, ``calibrate_step``) with the same
options, so a ``compile=True`` config trains, validates and calibrates
compiled. :func:`check_compile_cfg` turns a missing compiler into an error
naming the key, before anything runs.
"""
from typing import Any, Callable, Optional

import torch

__all__ = ['check_compile_cfg', 'compile_steps']


def check_compile_cfg(compile_cfg: Any) -> Optional[dict]:
    """Check the Runner's ``compile`` option against this machine.

    Args:
        compile_cfg: ``cfg.compile``: ``None``/``False`` (off), ``True``
            (inductor) or a dict of :func:`torch.compile` arguments.

    Returns:
        dict | None: The :func:`torch.compile` keyword arguments, or None if
        compilation is off.

    Raises:
        TypeError: If ``compile`` is neither a bool nor a dict.
        ValueError: If the inductor backend is asked for but cannot compile
            here (no inductor in this torch, no C++ compiler for CPU code,
            no Triton for CUDA code).
    """
    if compile_cfg is None or compile_cfg is False:
        return None
    if not isinstance(compile_cfg, (bool, dict)):
        raise TypeError('`compile` must be a bool or a dict of '
                        'torch.compile arguments, got '
                        f'{type(compile_cfg).__name__}')
    options = {} if compile_cfg is True else dict(compile_cfg)
    if options.get('backend', 'inductor') == 'inductor':
        missing = _inductor_missing('cuda' if torch.cuda.is_available()
                                    else 'cpu')
        if missing:
            raise ValueError(
                f'`compile`={compile_cfg!r} asks for torch.compile with the '
                f'inductor backend, but {missing}. Install it, or pick '
                "another backend (compile=dict(backend='aot_eager')), or "
                'drop `compile` to train eagerly')
    return options


def _inductor_missing(device: str) -> str:
    """Why inductor cannot compile for ``device`` here ('' if it can)."""
    try:
        import torch._inductor  # noqa: F401
    except ImportError as e:
        return f'this torch has no inductor ({e})'
    if device == 'cuda':
        from torch.utils._triton import has_triton
        return '' if has_triton() else 'Triton is not installed'
    try:
        from torch._inductor.cpp_builder import get_cpp_compiler
        get_cpp_compiler()
    except Exception as e:  # noqa: BLE001 - any failure means no compiler
        return f'no C++ compiler for its CPU code was found ({e!r})'
    return ''


def compile_steps(runner, *names: str) -> None:
    """Compile ``runner.model.<name>`` for each of ``names``, once.

    A no-op unless the config sets ``compile``; a step compiled before
    (by an earlier call, or by mmengine) is left as it is.

    Args:
        runner (Runner): The runner; its ``cfg.compile`` holds the options.
        *names (str): Step methods, e.g. ``'val_step'``.
    """
    options = check_compile_cfg(runner.cfg.get('compile'))
    if options is None:
        return
    model = runner.model
    for name in names:
        step: Callable = getattr(model, name)
        if hasattr(step, '_torchdynamo_orig_callable'):
            continue  # already compiled
        setattr(model, name, torch.compile(step, **options))
