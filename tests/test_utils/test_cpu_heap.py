"""reuse_freed_memory: freed large blocks stay in the process inside the
block and go back to the system when it ends (glibc)."""
import os
import sys

import pytest
import torch

from mmrazor_quant.utils import cpu_heap
from mmrazor_quant.utils.cpu_heap import reuse_freed_memory

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith('linux') or cpu_heap._glibc() is None,
    reason='glibc malloc only')

MIB = 2**20
BLOCK = 256 * MIB


def resident_mib() -> float:
    with open('/proc/self/statm') as f:
        pages = int(f.read().split()[1])
    return pages * os.sysconf('SC_PAGE_SIZE') / MIB


def touch_and_free() -> None:
    block = torch.ones(BLOCK // 4)  # every page written
    del block


def test_outside_a_freed_block_leaves_at_once():
    before = resident_mib()
    touch_and_free()
    assert resident_mib() - before < 32


def test_inside_kept_and_reused_then_returned():
    """Kept once freed; reused, so four blocks in turn hold at most two
    (where small allocations split the first hole, the next block comes
    from the top of the heap and is then reused); returned on leaving."""
    before = resident_mib()
    with reuse_freed_memory():
        touch_and_free()
        kept = resident_mib() - before
        for _ in range(3):
            touch_and_free()
        held = resident_mib() - before
    after = resident_mib() - before
    assert kept > 200
    assert held < 2 * BLOCK / MIB + 32
    assert after < 32


def test_nested_blocks_keep_until_the_outermost_ends():
    before = resident_mib()
    with reuse_freed_memory():
        with reuse_freed_memory():
            pass
        touch_and_free()  # still inside the outer block
        assert resident_mib() - before > 200
    assert resident_mib() - before < 32


def test_the_environment_switch_turns_it_off(monkeypatch):
    monkeypatch.setenv(cpu_heap.SWITCH, '0')
    before = resident_mib()
    with reuse_freed_memory():
        touch_and_free()
        assert resident_mib() - before < 32
