"""The stack's deprecation notices are filtered by message, nothing else."""
import logging
import types
import warnings

from mmengine.fileio import FileClient
from mmengine.logging import MMLogger, print_log

from mmrazor_quant.utils.quiet import quiet_runner_logs, quiet_stack_warnings

PKG_RESOURCES = ('pkg_resources is deprecated as an API. See '
                 'https://setuptools.pypa.io/en/latest/pkg_resources.html.')


def test_only_the_pkg_resources_notice_is_ignored():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter('always')
        quiet_stack_warnings()
        quiet_stack_warnings()  # idempotent
        warnings.warn(PKG_RESOURCES, UserWarning)
        warnings.warn('calibration saw NaN', UserWarning)
        warnings.warn(PKG_RESOURCES, DeprecationWarning)  # other category
        warnings.warn('old API', DeprecationWarning)
    assert [(w.category, str(w.message)) for w in caught] == [
        (UserWarning, 'calibration saw NaN'),
        (DeprecationWarning, PKG_RESOURCES),
        (DeprecationWarning, 'old API')]


class _Records(logging.Handler):

    def __init__(self):
        super().__init__()
        self.messages = []

    def emit(self, record):
        self.messages.append(record.getMessage())


def test_file_client_notices_dropped_from_the_runner_log():
    logger = MMLogger.get_instance('test_quiet_runner_logs')
    records = _Records()
    logger.addHandler(records)
    runner = types.SimpleNamespace(logger=logger)
    quiet_runner_logs(runner)
    quiet_runner_logs(runner)
    assert len(logger.filters) == 1
    FileClient.infer_client(None, 'work_dirs/x')  # what CheckpointHook does
    print_log('a real warning', logger='current', level=logging.WARNING)
    assert records.messages == ['a real warning']
