"""Where Slurm cannot be installed, the cluster says why (and the launcher
tests skip with that reason instead of passing)."""
import pytest

from . import cluster
from .cluster import SlurmUnavailable, install_slurm
from .conftest import start_cluster_or_skip


def test_not_root_is_unavailable(monkeypatch):
    monkeypatch.setattr(cluster, '_missing_packages', lambda: ['slurmd'])
    monkeypatch.setattr(cluster.os, 'geteuid', lambda: 1000)
    with pytest.raises(SlurmUnavailable, match='slurmd not installed and '
                       'not running as root'):
        install_slurm()


def test_no_apt_is_unavailable(monkeypatch):
    monkeypatch.setattr(cluster, '_missing_packages', lambda: ['munge'])
    monkeypatch.setattr(cluster.os, 'geteuid', lambda: 0)
    monkeypatch.setattr(cluster.shutil, 'which', lambda *a, **k: None)
    with pytest.raises(SlurmUnavailable, match='munge not installed and no '
                       'apt-get here'):
        install_slurm()


def test_unavailable_cluster_skips(monkeypatch):
    def unavailable(self):
        raise SlurmUnavailable('slurmd not installed and not running as root')

    monkeypatch.setattr(cluster.LocalSlurmCluster, 'start', unavailable)
    with pytest.raises(pytest.skip.Exception, match='no test Slurm cluster: '
                       'slurmd not installed'):
        start_cluster_or_skip()
