"""Suite-wide hooks: skips tests marked ``cuda`` on machines without a CUDA
GPU; marks the slow areas ``slow`` (``make test-fast`` leaves them out);
under pytest-xdist (``make test`` runs two workers), keeps the Slurm tests on
one worker and shares the cores between the workers; prints the time spent
per test area at the end of a run."""
import os
import os.path as osp
from collections import defaultdict

import pytest
import torch

TESTS = osp.dirname(osp.abspath(__file__))
# Whole directories and files of the slow tier, relative to tests/ (single
# slow tests elsewhere carry ``@pytest.mark.slow`` themselves); chosen from
# measured durations, docs/testing.md.
SLOW_PATHS = (
    'test_zoo',  # 32 families of mmcls and mmpretrain, traced and exported
    'test_models/test_compile.py',  # torch.compile (dynamo, inductor)
    'test_engine/test_compile_runner.py',
    'test_slurm/test_slurm_launch.py',  # a Slurm cluster and 10 processes
    'test_engine/test_distributed_ptq.py',  # two ranks over gloo
    'test_models/test_observers/test_distributed_observers.py',
    'test_tools/test_mmrazor_verbatim.py',  # the tools end to end
    'test_tools/test_fp32_train.py',
    'test_detection/test_mmrazor_configs.py',
    'test_deploy/test_parity_matrix.py',  # every arch x algorithm
)


def pytest_configure(config):
    workers = int(os.environ.get('PYTEST_XDIST_WORKER_COUNT', '0'))
    if workers > 1:
        # Each worker gets its share of the cores, and so do the tools and
        # ranks it starts: spinning OpenMP threads of two workers on the
        # same cores would slow both.
        threads = str(max(1, (os.cpu_count() or 1) // workers))
        os.environ['OMP_NUM_THREADS'] = threads
        torch.set_num_threads(int(threads))


def _slow_paths():
    paths = [osp.join(TESTS, p) for p in SLOW_PATHS]
    missing = [p for p in paths if not osp.exists(p)]
    if missing:
        raise pytest.UsageError(
            f'tests/conftest.py SLOW_PATHS names missing paths: {missing}')
    return tuple(p.rstrip(os.sep) for p in paths)


def pytest_collection_modifyitems(config, items):
    slow_paths = _slow_paths()
    slow = pytest.mark.slow
    # One test Slurm cluster at a time (its daemons use fixed ports).
    slurm = pytest.mark.xdist_group('slurm')
    for item in items:
        if 'test_slurm' in item.nodeid.split('/'):
            item.add_marker(slurm)
        path = str(item.path)
        if any(path == p or path.startswith(p + os.sep) for p in slow_paths):
            item.add_marker(slow)
    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(reason='needs a CUDA GPU')
    for item in items:
        if item.get_closest_marker('cuda') is not None:
            item.add_marker(skip)


def _area(nodeid: str) -> str:
    """``tests/test_deploy`` for ``tests/test_deploy/test_x.py::test_y``."""
    parts = nodeid.split('::')[0].split('/')
    return '/'.join(parts[:2])


def pytest_terminal_summary(terminalreporter):
    # Setup, call and teardown of every test, from the reports (under xdist
    # the workers' reports reach the controller with their durations).
    seconds = defaultdict(float)
    for reports in terminalreporter.stats.values():
        for report in reports:
            if getattr(report, 'when', None) and hasattr(report, 'duration'):
                seconds[_area(report.nodeid)] += report.duration
    if not seconds:
        return
    write = terminalreporter.write_line
    terminalreporter.section('time per test area (sum of test durations)')
    for area, sec in sorted(seconds.items(), key=lambda kv: -kv[1]):
        write(f'{sec:8.1f} s  {area}')
    write(f'{sum(seconds.values()):8.1f} s  total')
