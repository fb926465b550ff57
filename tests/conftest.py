"""Skips tests marked ``cuda`` on machines without a CUDA GPU; under
pytest-xdist (``make test`` runs two workers), keeps the Slurm tests on one
worker and shares the cores between the workers."""
import os

import pytest
import torch


def pytest_configure(config):
    workers = int(os.environ.get('PYTEST_XDIST_WORKER_COUNT', '0'))
    if workers > 1:
        # Each worker gets its share of the cores, and so do the tools and
        # ranks it starts: spinning OpenMP threads of two workers on the
        # same cores would slow both.
        threads = str(max(1, (os.cpu_count() or 1) // workers))
        os.environ['OMP_NUM_THREADS'] = threads
        torch.set_num_threads(int(threads))


def pytest_collection_modifyitems(config, items):
    # One test Slurm cluster at a time (its daemons use fixed ports).
    slurm = pytest.mark.xdist_group('slurm')
    for item in items:
        if 'test_slurm' in item.nodeid.split('/'):
            item.add_marker(slurm)
    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(reason='needs a CUDA GPU')
    for item in items:
        if item.get_closest_marker('cuda') is not None:
            item.add_marker(skip)
