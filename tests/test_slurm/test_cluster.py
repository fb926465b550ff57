"""Where Slurm is missing, the cluster says why and names the make target
that installs it (a test never installs packages), and the launcher tests
skip with that reason instead of passing."""
import pytest

from . import cluster
from .cluster import SlurmUnavailable, check_installed
from .conftest import start_cluster_or_skip


def _never_run(*args, **kwargs):
    raise AssertionError(f'ran {args[0] if args else kwargs}')


def test_missing_packages_name_make_target_even_as_root(monkeypatch):
    monkeypatch.setattr(cluster, '_missing_packages',
                        lambda: ['munge', 'slurmd'])
    monkeypatch.setattr(cluster.os, 'geteuid', lambda: 0)
    monkeypatch.setattr(cluster.subprocess, 'run', _never_run)
    with pytest.raises(SlurmUnavailable,
                       match=r'munge, slurmd not installed \(run '
                       r'`make slurm-deps`'):
        check_installed()


def test_missing_packages_skip_the_cluster_tests(monkeypatch):
    monkeypatch.setattr(cluster, '_missing_packages', lambda: ['slurmd'])
    monkeypatch.setattr(cluster.subprocess, 'run', _never_run)
    monkeypatch.setattr(cluster.subprocess, 'Popen', _never_run)
    with pytest.raises(pytest.skip.Exception,
                       match='no test Slurm cluster: slurmd not installed '
                       r'\(run `make slurm-deps`'):
        start_cluster_or_skip()
