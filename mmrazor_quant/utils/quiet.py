"""Keep the stack's deprecation notices out of the tools' output.

A first run of ``make demo`` or ``tools/*.py`` printed more third-party
deprecation notices than progress lines: setuptools' ``pkg_resources``
notice (once per package that imports it: mmengine, mmcv, mmcls, mmdet) and
mmengine's own ``FileClient``/``HardDiskBackend`` notices (its
``CheckpointHook`` builds a ``FileClient`` on every training run). None of
them is actionable for a user of this package (the pins live in
``setup.py``).

Each notice is matched by its category and its message, never by category
alone: every other warning, ours and the stack's, still shows. Nothing
happens at import; the tools call :func:`quiet_stack_warnings` first and
:func:`quiet_runner_logs` on each Runner they build.
"""
import logging
import warnings

__all__ = ['quiet_stack_warnings', 'quiet_runner_logs', 'STACK_LOG_NOTICES']

#: (category, message regex) of the Python warnings filtered.
STACK_WARNINGS = (
    # setuptools >= 67 on `import pkg_resources` (mmengine's
    # package_utils, mmcv, mmcls, mmdet); we pin setuptools < 81.
    (UserWarning, r'pkg_resources is deprecated as an API'),
)

#: Starts of mmengine log lines filtered (its own deprecations, logged
#: when its hooks build a FileClient with default arguments).
STACK_LOG_NOTICES = (
    '"FileClient" will be deprecated in future',
    '"HardDiskBackend" is the alias of "LocalBackend"',
)


class _StackNoticeFilter(logging.Filter):
    """Drops the log records listed in :data:`STACK_LOG_NOTICES`."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith(STACK_LOG_NOTICES)


def quiet_stack_warnings() -> None:
    """Ignore the stack's deprecation warnings of :data:`STACK_WARNINGS`.

    Call it at a tool's entry point, before the stack is imported in full
    (building a Runner imports mmcls, mmcv and mmdet). Idempotent.
    """
    for category, message in STACK_WARNINGS:
        warnings.filterwarnings('ignore', message=message, category=category)


def quiet_runner_logs(runner) -> None:
    """Filter :data:`STACK_LOG_NOTICES` from ``runner``'s logger.

    mmengine logs them to the current ``MMLogger``, which is the one the
    Runner built; each Runner has its own. Idempotent.

    Args:
        runner (mmengine.runner.Runner): A built Runner.
    """
    logger = runner.logger
    if not any(isinstance(f, _StackNoticeFilter) for f in logger.filters):
        logger.addFilter(_StackNoticeFilter())
