"""Seed bug: concurrent first cells of one key each spawned a kernel (110 kernels for one chat).

"Pending" is not "dead": the first acquire puts a pending entry in the map, the others wait on it.
"""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

from pytest_hermes_kernel import KernelKey
from tests.support import kernel_ids_below

THREADS = 16


def test_concurrent_first_cells_of_one_key_start_exactly_one_kernel(make_registry):
    reg = make_registry(max_kernels=4)
    key = KernelKey(owner="conv-race")
    barrier = threading.Barrier(THREADS)
    before = kernel_ids_below()

    def first_cell(_i: int):
        barrier.wait()
        return reg.execute(key, "import os\nhits = globals().get('hits', 0) + 1\nos.getpid()")

    with ThreadPoolExecutor(THREADS) as pool:
        results = list(pool.map(first_cell, range(THREADS)))

    assert all(r.status == "ok" for r in results), [r.summary() for r in results]
    assert len({r.value for r in results}) == 1, "every cell must run in the same kernel process"
    assert len({r.kernel.kernel_id for r in results}) == 1
    assert len(kernel_ids_below() - before) == 1, "exactly one kernel process tree may exist"
    assert reg.stats["started"] == 1
    assert [s.key for s in reg.snapshot()] == [reg.resolve(key)]
    assert reg.execute(key, "hits").value == str(THREADS)  # cells were serialized, none lost
