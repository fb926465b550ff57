"""Run a vendor toolchain that lives in its own venv.

Some deploy targets ship toolchains whose pins clash with the main venv
(rknn-toolkit2 wants torch<=2.4, numpy<=1.26, onnx<=1.18). Each gets a venv
of its own built by ``make`` and is driven through files: the caller writes
a job JSON and its input files, a worker script run by path in that venv
does the work and writes its outputs under temporary names, renamed into
place when complete, and a result JSON (``ok``, ``error``, ...). Nothing is
imported across the two venvs.
"""
import json
import os
import os.path as osp
import subprocess
import tempfile
from dataclasses import dataclass
from typing import Mapping, Optional

__all__ = ['ExternalEnv', 'ToolchainMissing', 'ToolchainError']

#: Lines of the worker's log quoted in an error.
_LOG_TAIL = 30


class ToolchainMissing(RuntimeError):
    """The venv of a toolchain is not built."""


class ToolchainError(RuntimeError):
    """The toolchain ran and failed (the message quotes its log)."""


def _repo_root() -> str:
    return osp.dirname(osp.dirname(osp.dirname(osp.abspath(__file__))))


@dataclass(frozen=True)
class ExternalEnv:
    """A toolchain in a venv of its own.

    Args:
        name (str): The toolchain, for messages (``'RKNN'``).
        venv (str): The venv's directory, relative to the repository root
            (``'.venv-rknn'``).
        make_target (str): The ``make`` target that builds it.
        env_var (str): An environment variable that, when set, gives the
            venv's directory instead (e.g. a venv shared between checkouts).
    """
    name: str
    venv: str
    make_target: str
    env_var: str

    @property
    def path(self) -> str:
        """The venv's directory."""
        return os.environ.get(self.env_var) or osp.join(
            _repo_root(), self.venv)

    @property
    def python(self) -> str:
        """The venv's interpreter.

        Raises:
            ToolchainMissing: If the venv is not built.
        """
        python = osp.join(self.path, 'bin', 'python')
        if not osp.isfile(python) or not osp.isfile(
                osp.join(self.path, '.installed')):
            raise ToolchainMissing(
                f'{self.name} toolchain not found: run `make '
                f'{self.make_target}` (no complete venv at {self.path}; '
                f'${self.env_var} may point to another)')
        return python

    def available(self) -> bool:
        """Whether the venv is built."""
        try:
            self.python
        except ToolchainMissing:
            return False
        return True

    def run(self, script: str, job: Mapping, workdir: Optional[str] = None,
            timeout: float = 1800) -> dict:
        """Run ``script`` on ``job`` in the venv and return its result.

        The job JSON gets a ``result`` path; the script writes its result
        there (``ok`` and, on failure, ``error``).

        Args:
            script (str): The worker script, run by path.
            job (Mapping): JSON-serialisable job; paths in it are the
                worker's inputs and outputs.
            workdir (str, optional): Directory for the job and result
                files. Defaults to a temporary one, removed afterwards.
            timeout (float): Seconds before the worker is stopped.
                Defaults to 1800.

        Returns:
            dict: The worker's result.

        Raises:
            ToolchainMissing: If the venv is not built.
            ToolchainError: If the worker fails, stops without a result or
                runs past ``timeout``.
        """
        python = self.python
        if workdir is None:
            with tempfile.TemporaryDirectory(prefix='mmrq_job_') as tmp:
                return self.run(script, job, tmp, timeout)
        job = dict(job, result=osp.join(workdir, 'result.json'))
        job_path = osp.join(workdir, 'job.json')
        with open(job_path, 'w') as f:
            json.dump(job, f, indent=1)
        # The main venv's paths must not leak into the toolchain's.
        env = {k: v for k, v in os.environ.items()
               if k not in ('PYTHONPATH', 'PYTHONHOME', 'VIRTUAL_ENV')}
        try:
            proc = subprocess.run([python, script, job_path], env=env,
                                  cwd=workdir, capture_output=True,
                                  text=True, timeout=timeout)
        except subprocess.TimeoutExpired as e:
            raise ToolchainError(f'{self.name} worker ran past {timeout} s'
                                 ) from e
        result = {}
        if osp.exists(job['result']):
            with open(job['result']) as f:
                result = json.load(f)
        if proc.returncode != 0 or not result.get('ok', False):
            log = (proc.stdout + proc.stderr).strip().splitlines()
            raise ToolchainError(
                f'{self.name} toolchain failed: '
                f'{result.get("error", f"exit status {proc.returncode}")}'
                '\n--- its log (last lines) ---\n'
                + '\n'.join(log[-_LOG_TAIL:]))
        return result
