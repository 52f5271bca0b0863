"""Seen (the endurance round, 2026-12-06): a filecell transport kept the id of every kernel it ever
launched (``kernel_ids``, which its leak probe reads to list only its own kernels' processes where
the backend runs), for as long as it lived: 300 kernels started and ended, 300 ids kept (about
100 bytes each), on every backend, also the local shell, whose kernels that probe never lists.

Now an ended kernel's id goes at its cleanup on the local shell; through any other backend it
stays while a scan may still find what its cells left running (still reported, below), goes once
a scan finds none of its processes, and only the newest ``ENDED_IDS_KEPT`` ended ones stay for a
process that runs no leak check.
"""

from __future__ import annotations

import os

from pytest_hermes_kernel import start_kernel
from pytest_hermes_kernel.transports import close_transport, make_transport
from pytest_hermes_kernel.transports.filecell.probes import KernelIds

KERNELS = 4  # with the bug each leaves its id: 4 where none may stay
HELPER = "import subprocess\nsubprocess.Popen(['sleep', '300'], start_new_session=True).pid"


def test_kernels_started_and_ended_leave_no_ids_once_scanned(execute_backend):
    transport = make_transport("filecell", backend=execute_backend)
    helpers: list[str] = []
    try:
        for _ in range(KERNELS):
            with start_kernel(transport) as kernel:
                assert kernel.execute("1").value == "1"
        running = start_kernel(transport)
        with running:
            helpers.append(helper := running.execute(HELPER).value)
            with start_kernel(transport) as ended:
                helpers.append(left := ended.execute(HELPER).value)
            found = transport.leak_snapshot(os.getpid())["remote kernel process"] \
                if not transport.runs_on_this_host else {}

            assert len(transport.kernel_ids) <= 2, f"{len(transport.kernel_ids)} kernel ids kept, {KERNELS + 2} started"
            assert running.kernel_id in transport.kernel_ids, "a running kernel's processes are still listed"
            if not transport.runs_on_this_host:  # what an ended kernel's cell left there is still reported
                assert any(desc.startswith(f"pid {left} ") for desc in found.values()), found
                assert any(desc.startswith(f"pid {helper} ") for desc in found.values()), found
    finally:
        transport.run_command(f"kill -9 {' '.join(helpers)} 2>/dev/null", 15.0)
        close_transport(transport)


def test_only_the_newest_ended_kernels_ids_stay_without_a_scan():
    ids = KernelIds(ended_kept=3)
    for n in range(10):
        ids.add(f"k{n}")
        ids.ended(f"k{n}", scanned=True)
    ids.add("running")

    assert len(ids) == 4 and "running" in ids and "k9" in ids and "k6" not in ids
    ids.seen({"k8"})
    assert len(ids) == 2 and "k8" in ids and "running" in ids

