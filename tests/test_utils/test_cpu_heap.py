"""reuse_freed_memory: freed large blocks stay in the process inside the
block and go back to the system when it ends (glibc).

Resident memory depends on what the process allocated before (free holes
left in the heap by earlier tests are reused and then kept), so the
scenarios run in a fresh interpreter."""
import json
import os
import subprocess
import sys

import pytest

from mmrazor_quant.utils import cpu_heap

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith('linux') or cpu_heap._glibc() is None,
    reason='glibc malloc only')

BLOCK_MIB = 256
PRELUDE = f'''
import json, os
import torch
from mmrazor_quant.utils.cpu_heap import reuse_freed_memory

def resident():
    with open('/proc/self/statm') as f:
        pages = int(f.read().split()[1])
    return pages * os.sysconf('SC_PAGE_SIZE') / 2**20

def touch_and_free():
    block = torch.ones({BLOCK_MIB} * 2**18)  # every page written
    del block
'''
SCENARIOS = PRELUDE + '''
out = {}
before = resident()
touch_and_free()
out['outside'] = resident() - before
with reuse_freed_memory():
    with reuse_freed_memory():
        pass
    touch_and_free()
    out['kept'] = resident() - before
    for _ in range(3):
        touch_and_free()
    out['held'] = resident() - before
out['after'] = resident() - before
print(json.dumps(out))
'''
SWITCHED_OFF = PRELUDE + '''
before = resident()
with reuse_freed_memory():
    touch_and_free()
    print(json.dumps(dict(switched_off=resident() - before)))
'''


def _run(script: str, **env) -> dict:
    result = subprocess.run([sys.executable, '-c', script],
                            capture_output=True, text=True, check=True,
                            env={**os.environ, **env})
    return json.loads(result.stdout.strip().splitlines()[-1])


@pytest.fixture(scope='module')
def grown():
    """Resident MiB above the start of each step (see ``SCENARIOS``)."""
    return _run(SCENARIOS)


def test_outside_a_freed_block_leaves_at_once(grown):
    assert grown['outside'] < 32


def test_inside_kept_and_reused_then_returned(grown):
    """Kept once freed, past the end of a nested block; reused, so four
    blocks in turn hold at most two (where small allocations split the
    first hole, the next block comes from the top of the heap and is then
    reused); returned when the outermost block ends."""
    assert grown['kept'] > BLOCK_MIB - 56
    assert grown['held'] < 2 * BLOCK_MIB + 32
    assert grown['after'] < 32


def test_the_environment_switch_turns_it_off():
    grown = _run(SWITCHED_OFF, **{cpu_heap.SWITCH: '0'})
    assert grown['switched_off'] < 32
