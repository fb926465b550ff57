"""A throw-away single-node Slurm cluster for the launcher tests.

:class:`LocalSlurmCluster` needs Debian's ``slurmctld``, ``slurmd``,
``slurm-client`` and ``munge`` installed (``make slurm-deps`` installs them;
a test never installs anything), writes a munge key and
a ``slurm.conf`` into its own temporary directory, starts ``munged``,
``slurmctld`` and ``slurmd`` in the foreground on loopback (fresh ports, a
private munge socket, every state/spool/log/pid path inside the temporary
directory), and waits until ``sinfo`` reports the node idle. :meth:`stop`
ends exactly the processes it started, by pid, and deletes the directory.
Daemons of other clusters on the machine are never looked at.

Clients reach this cluster through :attr:`env` (``SLURM_CONF``); nothing is
written outside the temporary directory.

Anything that prevents the cluster from coming up (a program missing,
a daemon exiting, no idle node within the timeout) raises
:class:`SlurmUnavailable` with the reason and the tail of the daemon logs.
"""
import os
import os.path as osp
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from typing import Dict, List, Optional

__all__ = ['LocalSlurmCluster', 'SlurmUnavailable', 'check_installed']

# Debian package -> a program it ships, to tell whether it is installed.
PACKAGES = {
    'munge': 'munged',
    'slurmctld': 'slurmctld',
    'slurmd': 'slurmd',
    'slurm-client': 'srun',
}
_SBIN_PATH = '/usr/sbin:/usr/bin:/sbin:/bin'
PARTITION = 'debug'

SLURM_CONF = """\
# Written by tests/test_slurm/cluster.py: one node, everything in {root}.
ClusterName={cluster}
SlurmctldHost={host}(127.0.0.1)
SlurmctldPort={ctld_port}
SlurmdPort={slurmd_port}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={root}/munge/munge.socket
MpiDefault=none
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/builtin
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
ReturnToService=2
SlurmdParameters=config_overrides
StateSaveLocation={root}/state
SlurmdSpoolDir={root}/spool/slurmd_%n
SlurmctldPidFile={root}/run/slurmctld.pid
SlurmdPidFile={root}/run/slurmd_%n.pid
SlurmctldLogFile={root}/log/slurmctld.log
SlurmdLogFile={root}/log/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
SlurmctldTimeout=30
SlurmdTimeout=30
InactiveLimit=0
KillWait=5
MinJobAge=5
NodeName={host} NodeAddr=127.0.0.1 CPUs={cpus} State=UNKNOWN
PartitionName={partition} Nodes={host} Default=YES MaxTime=INFINITE State=UP
"""


class SlurmUnavailable(RuntimeError):
    """Slurm is missing or cannot start here (the reason says why)."""


def _missing_packages() -> List[str]:
    path = os.environ.get('PATH', '') + ':' + _SBIN_PATH
    return [pkg for pkg, prog in PACKAGES.items()
            if shutil.which(prog, path=path) is None]


def check_installed() -> None:
    """Check that the Slurm and munge programs are installed.

    Raises:
        SlurmUnavailable: Naming the missing packages and
            ``make slurm-deps``, which installs them.
    """
    missing = _missing_packages()
    if missing:
        raise SlurmUnavailable(
            f'{", ".join(missing)} not installed (run `make slurm-deps`, '
            'as root on Debian, to install them)')


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        return s.getsockname()[1]


def _tail(path: str, lines: int = 15) -> str:
    try:
        with open(path, errors='replace') as f:
            return ''.join(f.readlines()[-lines:])
    except OSError:
        return ''


class LocalSlurmCluster:
    """One node (this host, ``NodeAddr=127.0.0.1``) with ``cpus`` CPUs in
    partition ``debug``.

    Examples:
        >>> cluster = LocalSlurmCluster().start()
        >>> subprocess.run(['srun', '-n2', 'hostname'], env=cluster.env)
        >>> cluster.stop()

    Args:
        cpus (int): CPUs of the node. Defaults to 2.
        start_timeout (float): Seconds to wait for the node to be idle.
            Defaults to 60.
    """

    partition = PARTITION

    def __init__(self, cpus: int = 2, start_timeout: float = 60) -> None:
        self.cpus = cpus
        self.start_timeout = start_timeout
        self.root: Optional[str] = None
        self._procs: Dict[str, subprocess.Popen] = {}
        self.env: Dict[str, str] = {}

    # -- set-up ----------------------------------------------------------
    def start(self) -> 'LocalSlurmCluster':
        """Check the programs, configure, start, wait for idle.

        Raises:
            SlurmUnavailable: With the reason, after stopping whatever was
                started.
        """
        check_installed()
        self.root = tempfile.mkdtemp(prefix='mmrq_slurm_')
        try:
            self._write_config()
            self._start_munged()
            self._start('slurmctld', ['slurmctld', '-D', '-f', self.conf])
            self._start('slurmd', ['slurmd', '-D', '-f', self.conf,
                                   '-N', self.host])
            self._wait_idle()
        except BaseException:
            self.stop()
            raise
        return self

    @property
    def conf(self) -> str:
        return osp.join(self.root, 'slurm.conf')

    def _write_config(self) -> None:
        for sub in ('munge', 'state', 'spool', 'run', 'log'):
            os.makedirs(osp.join(self.root, sub), mode=0o700)
        # munged refuses keys that others can read.
        key = osp.join(self.root, 'munge', 'munge.key')
        with open(os.open(key, os.O_WRONLY | os.O_CREAT, 0o400), 'wb') as f:
            f.write(os.urandom(1024))
        self.host = socket.gethostname().split('.')[0]
        text = SLURM_CONF.format(
            root=self.root, cluster=f'mmrq{os.getpid()}', host=self.host,
            ctld_port=_free_port(), slurmd_port=_free_port(),
            cpus=self.cpus, partition=self.partition)
        with open(self.conf, 'w') as f:
            f.write(text)
        # Only needed if a cgroup plugin gets enabled; harmless otherwise.
        with open(osp.join(self.root, 'cgroup.conf'), 'w') as f:
            f.write('CgroupPlugin=autodetect\n')
        self.env = dict(
            os.environ, SLURM_CONF=self.conf,
            PATH=os.environ.get('PATH', '') + ':' + _SBIN_PATH)

    def _start_munged(self) -> None:
        d = osp.join(self.root, 'munge')
        self._start('munged', [
            'munged', '--foreground', '--force',
            f'--key-file={d}/munge.key', f'--socket={d}/munge.socket',
            f'--pid-file={d}/munged.pid', f'--log-file={d}/munged.log',
            f'--seed-file={d}/munged.seed'
        ])
        self._wait(lambda: osp.exists(f'{d}/munge.socket'), 'munged socket',
                   f'{d}/munged.log')

    def _start(self, name: str, cmd: List[str]) -> None:
        log = open(osp.join(self.root, 'log', f'{name}.out'), 'wb')
        try:
            self._procs[name] = subprocess.Popen(
                cmd, env=self.env, stdout=log, stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL, start_new_session=True)
        except OSError as e:
            raise SlurmUnavailable(f'cannot start {name}: {e}') from e
        finally:
            log.close()

    def _check_alive(self) -> None:
        for name, proc in self._procs.items():
            if proc.poll() is not None:
                raise SlurmUnavailable(
                    f'{name} exited with {proc.returncode}:\n'
                    f'{self.logs()}')

    def _wait(self, ready, what: str, log: str = '') -> None:
        deadline = time.monotonic() + self.start_timeout
        while time.monotonic() < deadline:
            self._check_alive()
            if ready():
                return
            time.sleep(0.5)
        raise SlurmUnavailable(
            f'{what} not ready after {self.start_timeout:.0f} s:\n'
            f'{self.logs()}')

    def _wait_idle(self) -> None:
        def idle() -> bool:
            out = self.run(['sinfo', '-h', '-N', '-o', '%N %t'], check=False)
            return out.returncode == 0 and f'{self.host} idle' in out.stdout

        self._wait(idle, 'node idle in sinfo')

    # -- use -------------------------------------------------------------
    def run(self, cmd: List[str], check: bool = True, timeout: float = 30,
            **kwargs) -> subprocess.CompletedProcess:
        """Run a client command (``sinfo``, ``srun`` …) on this cluster."""
        env = dict(self.env, **kwargs.pop('env', {}))
        return subprocess.run(cmd, env=env, capture_output=True, text=True,
                              check=check, timeout=timeout, **kwargs)

    def logs(self) -> str:
        """The last lines of every daemon log, for error messages."""
        if not self.root:
            return ''
        parts = []
        for name in sorted(os.listdir(osp.join(self.root, 'log'))):
            parts.append(f'--- {name}\n' +
                         _tail(osp.join(self.root, 'log', name)))
        parts.append('--- munged.log\n' +
                     _tail(osp.join(self.root, 'munge', 'munged.log')))
        return '\n'.join(parts)

    # -- tear-down -------------------------------------------------------
    def stop(self) -> None:
        """Cancel leftover jobs, stop the daemons this object started (by
        pid, reverse start order) and delete the temporary directory."""
        if 'slurmctld' in self._procs and self._procs['slurmctld'].poll() \
                is None:
            self.run(['scancel', '--full', '-p', self.partition],
                     check=False)
            self._wait_no_jobs()
        for name in reversed(list(self._procs)):
            self._terminate(self._procs.pop(name))
        if self.root:
            shutil.rmtree(self.root, ignore_errors=True)
            self.root = None

    def _wait_no_jobs(self, timeout: float = 30) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            out = self.run(['squeue', '-h'], check=False)
            if out.returncode != 0 or not out.stdout.strip():
                return
            time.sleep(0.5)

    @staticmethod
    def _terminate(proc: subprocess.Popen, timeout: float = 15) -> None:
        if proc.poll() is not None:
            return
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout)
