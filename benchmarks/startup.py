"""Start-up time of the tools, against a bare ``import mmengine.runner``.

Each case is a fresh interpreter (wall time from start to exit, interpreter
start-up included), run ``--repeats`` times round-robin so that a change in
the machine's load hits every case alike; the table gives the median and
the ratio of medians to the baseline:

* ``import mmengine.runner``: the baseline (torch and mmengine);
* ``import torch, mmengine``: what any tool of the stack pays;
* ``tools/ptq.py --help``;
* ``PTQ start``: ``tools/ptq.py CONFIG`` up to ``Runner.from_cfg`` (imports,
  ``register_all_modules()``, the config and the codebases it names),
  where the process exits;
* ``PTQ calibration``: the same up to the first calibration step (the
  Runner built: model, float checkpoint, tracing, fake quants, data), for
  context: it holds the work of the config, not start-up.

``--timer cpu`` times the child's CPU seconds (user + system) instead of
the wall clock: on a machine shared with other jobs it leaves out the time
the process waits for a core.

Usage:
    python benchmarks/startup.py [--repeats 7] [--timer wall|cpu]
        [--config configs/quantization/ptq/ptq_openvino_resnet18_mnist.py]
"""
import argparse
import os
import os.path as osp
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Dict, List

REPO = osp.dirname(osp.dirname(osp.abspath(__file__)))
DEFAULT_CONFIG = 'configs/quantization/ptq/ptq_openvino_resnet18_mnist.py'

# Runs tools/ptq.py in this process and exits where STAGE says: the tool's
# own imports come first, as they would.
_STOP_AT = '''
import os, runpy, sys
stage, config, work_dir = sys.argv[1:4]
from mmrazor_quant.apis import runner_cli

def _exit(*args, **kwargs):
    sys.stdout.flush()
    os._exit(0)

if stage == 'runner':
    runner_cli._from_cfg_or_clean_up = _exit
else:
    from mmrazor_quant.engine.runner import PTQLoop
    PTQLoop.run = _exit
sys.argv = ['tools/ptq.py', config, '--work-dir', work_dir,
            '--cfg-options', 'model.float_checkpoint=None']
runpy.run_path('tools/ptq.py', run_name='__main__')
raise SystemExit('tools/ptq.py ended before the stage ' + stage)
'''


def cases(config: str, work_dir: str) -> Dict[str, List[str]]:
    """``{name: command}`` of every case."""
    py = sys.executable
    return {
        'import mmengine.runner': [py, '-c', 'import mmengine.runner'],
        'import torch, mmengine': [py, '-c', 'import torch, mmengine'],
        'tools/ptq.py --help': [py, 'tools/ptq.py', '--help'],
        'PTQ start (Runner.from_cfg)':
        [py, '-c', _STOP_AT, 'runner', config, work_dir],
        'PTQ calibration (first step)':
        [py, '-c', _STOP_AT, 'calibration', config, work_dir],
    }


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def time_once(command: List[str], timer: str = 'wall') -> float:
    """Seconds of one run of ``command`` (which must succeed): wall clock,
    or the child's CPU time with ``timer='cpu'``."""
    env = dict(os.environ, PYTHONPATH=REPO)
    start, cpu = time.perf_counter(), _children_cpu()
    done = subprocess.run(command, cwd=REPO, env=env, capture_output=True,
                          text=True)
    seconds = time.perf_counter() - start
    if timer == 'cpu':
        seconds = _children_cpu() - cpu
    if done.returncode != 0:
        raise RuntimeError(f'{command[1:3]} failed:\n{done.stderr[-2000:]}')
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--repeats', type=int, default=7)
    parser.add_argument('--config', default=DEFAULT_CONFIG)
    parser.add_argument('--timer', choices=('wall', 'cpu'), default='wall')
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as work_dir:
        commands = cases(args.config, work_dir)
        times: Dict[str, List[float]] = {name: [] for name in commands}
        for _ in range(args.repeats):
            for name, command in commands.items():
                times[name].append(time_once(command, args.timer))
    medians = {name: statistics.median(t) for name, t in times.items()}
    base = medians['import mmengine.runner']
    stack = medians['import torch, mmengine']
    print(f'{args.repeats} runs each, round-robin; median {args.timer} '
          'seconds '
          f'(min-max); load average before: {os.getloadavg()[0]:.1f}')
    print('| case | median s | min-max s | / import mmengine.runner | '
          '- import torch, mmengine (s) |')
    print('|---|--:|--:|--:|--:|')
    for name, median in medians.items():
        print(f'| {name} | {median:.2f} | {min(times[name]):.2f}-'
              f'{max(times[name]):.2f} | {median / base:.2f} | '
              f'{median - stack:+.2f} |')


if __name__ == '__main__':
    main()
