"""``slurm_cluster``: a single-node Slurm cluster for this package's tests,
started once per module and stopped at its end, daemons by pid. The
packages come only from ``make slurm-deps``; where they are missing or Slurm
cannot start the tests are skipped with the reason, never passed."""
import pytest

from .cluster import LocalSlurmCluster, SlurmUnavailable


def start_cluster_or_skip(cpus: int = 2) -> LocalSlurmCluster:
    """Start a :class:`LocalSlurmCluster`, or skip saying why it cannot."""
    try:
        return LocalSlurmCluster(cpus=cpus).start()
    except SlurmUnavailable as e:
        pytest.skip(f'no test Slurm cluster: {e}')


@pytest.fixture(scope='module')
def slurm_cluster():
    cluster = start_cluster_or_skip()
    try:
        yield cluster
    finally:
        cluster.stop()
