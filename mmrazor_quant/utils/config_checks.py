"""Check a config before the Runner creates its work dir.

``Runner.from_cfg`` makes the work dir and starts logging before it builds
the loops, so a misspelt loop argument would surface as a bare
``TypeError`` from deep inside the Runner, after a work dir was created. The
tools call :func:`load_config` and :func:`check_loop_cfgs` first.
"""
import inspect
import os.path as osp
from typing import Optional

from mmengine.config import Config

from .codebase_imports import import_config_codebases
from .config_scopes import check_base_scopes

__all__ = ['load_config', 'check_loop_cfgs']

# Arguments the Runner passes to a loop itself; a config cannot set them.
_RUNNER_SUPPLIED = ('self', 'runner', 'dataloader', 'evaluator')
_LOOP_KEYS = ('train_cfg', 'val_cfg', 'test_cfg')
# Keys the registry consumes itself: mmengine adds ``_scope_`` to dicts
# inherited from a scoped base (e.g. ``mmdet::`` configs).
_BUILD_KEYS = ('type', '_scope_')


def load_config(path: str, cfg_options: Optional[dict] = None) -> Config:
    """``Config.fromfile`` with errors that name the file at fault.

    Args:
        path (str): The config file.
        cfg_options (dict, optional): ``--cfg-options`` overrides.

    Raises:
        FileNotFoundError: If ``path`` or one of its ``_base_`` files does
            not exist; the message names both.
        ModuleNotFoundError: If a ``_base_`` entry inherits from a codebase
            that is not installed (``mmseg::...`` without mmseg); the message
            names the entry and how to install it.
        ValueError: If a ``_base_`` entry names a scope mmengine does not
            know (see :func:`check_base_scopes`).
        CodebaseNotInstalledError: If a key names a codebase that is not
            installed (``default_scope='mmdet'``,
            ``type='mmrazor_quant.PoseDigitsDataset'`` without mmpose); the
            message names the key and the extra that installs it.

    The modules of the codebases the config names (adapters, datasets) are
    imported here (:func:`~.codebase_imports.import_config_codebases`).
    """
    if not osp.isfile(path):
        raise FileNotFoundError(f'config file {path!r} does not exist')
    check_base_scopes(path)
    try:
        # custom_imports after the codebase check, which names the key.
        cfg = Config.fromfile(path, import_custom_modules=False)
    except FileNotFoundError as err:
        missing = err.filename or str(err)
        raise FileNotFoundError(
            f'config {path!r}: its `_base_` file {missing!r} does not '
            f'exist (relative `_base_` paths start at the config\'s own '
            f'directory)') from err
    if cfg_options:
        cfg.merge_from_dict(cfg_options)
    import_config_codebases(cfg)
    if cfg.get('custom_imports'):
        from mmengine.utils import import_modules_from_strings
        import_modules_from_strings(**cfg['custom_imports'])
    return cfg


def _loop_class(loop_type):
    """The loop class a ``type`` names, or ``None`` if it is not known."""
    if inspect.isclass(loop_type):
        return loop_type
    from mmrazor_quant.registry import LOOPS
    return LOOPS.get(loop_type)


def check_loop_cfgs(cfg: Config) -> None:
    """Raise on a loop argument that the loop's constructor does not take.

    Checks ``train_cfg``, ``val_cfg`` and ``test_cfg`` that name a ``type``
    (the Runner's shorthand forms without ``type`` are left to it).

    Raises:
        KeyError: If a ``type`` is not a registered loop.
        ValueError: If an argument is unknown; the message names the config
            key, the loop and the arguments it accepts.
    """
    for key in _LOOP_KEYS:
        loop_cfg = cfg.get(key)
        if not isinstance(loop_cfg, dict) or 'type' not in loop_cfg:
            continue
        loop_cls = _loop_class(loop_cfg['type'])
        if loop_cls is None:
            raise KeyError(f'{key}.type={loop_cfg["type"]!r} is not a '
                           f'registered loop (see tools/list_modules.py)')
        params = inspect.signature(loop_cls.__init__).parameters
        if any(p.kind is p.VAR_KEYWORD for p in params.values()):
            continue
        accepted = [n for n in params if n not in _RUNNER_SUPPLIED]
        unknown = [
            k for k in loop_cfg
            if k not in _BUILD_KEYS and k not in accepted
        ]
        if unknown:
            raise ValueError(
                f'{key}: {loop_cls.__name__} got unknown argument(s) '
                f'{unknown}; it accepts {accepted}')
