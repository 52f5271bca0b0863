"""Seen (the endurance round, 2026-12-06): on the spawn path (``server=False``) every kernel whose
cell left a process running as it ended (a helper started in a session of its own) left a record
of it, for ever: on this machine in ``procs._LEFT_BEHIND``, and per container or ssh target in a
docker, ssh or filecell transport's ``left``. Only a leak check forgot the ones gone, so a process
that runs none (an agent host) kept one per such process, long after it ended (10 kernels, 10
records of processes all gone; 100 bytes or so each).

Now this machine's records of processes gone are forgotten past ``LEFT_BEHIND_PRUNE_AT`` (256)
of them (then twice those still running), and a transport keeps the newest ``LEFT_KEPT`` (10,000)
per place, which it cannot look at without a scan.
"""

from __future__ import annotations

from pytest_hermes_kernel import procs, start_kernel
from pytest_hermes_kernel.transports.far_records import LeftBehind
from pytest_hermes_kernel.transports import close_transport, make_transport
from tests.support import gone, kill_quietly, wait_until

KERNELS = 8  # with the bug each leaves a record: 8 where at most 4 may stay
HELPER = "import subprocess\nsubprocess.Popen(['sleep', '{s}'], start_new_session=True).pid"


def test_records_of_processes_cells_left_go_once_the_processes_are_gone(monkeypatch):
    monkeypatch.setattr(procs, "LEFT_BEHIND_PRUNE_AT", 4, raising=False)
    monkeypatch.setattr(procs, "_prune_at", 4, raising=False)
    ours: set[str] = set()
    helpers: list[int] = []
    transport = make_transport("local", server=False)
    try:
        for batch in range(2):  # each batch's helpers end before the next: a helper still running is kept
            for _ in range(KERNELS // 2):
                with start_kernel(transport) as kernel:
                    ours.add(kernel.kernel_id)
                    helpers.append(int(kernel.execute(HELPER.format(s=2)).value))
            wait_until(lambda: all(gone(p) for p in helpers), 20.0, what="the helpers the cells left to end")
            procs.reap_orphans()  # (under the leak check this process adopts them: a zombie is not gone yet)
        with start_kernel(transport) as kernel:
            ours.add(kernel.kernel_id)
            helpers.append(last := int(kernel.execute(HELPER.format(s=30)).value))
        kept = [pid for pid, (_, kid) in procs._LEFT_BEHIND.items() if kid in ours]

        assert last in kept, "a process left running is still remembered (the leak check names it)"
        assert len(kept) <= 4, f"{len(kept)} records of processes left by {KERNELS + 1} kernels, {KERNELS} of them gone"
    finally:
        kill_quietly(helpers)
        close_transport(transport)


def test_a_transport_keeps_only_the_newest_records_of_each_place():
    left = LeftBehind(kept=3)
    for pid in range(10):
        left.add("container-a", f"k{pid}", [(pid, 100 + pid, "sleep 30")])
    left.add("container-b", "k", [(1, 1, "sleep 30")])

    assert left.of("container-a") == ["left:7:107:k7", "left:8:108:k8", "left:9:109:k9"]
    left.seen("container-b", left.of("container-b"), [])
    assert left.of("container-b") == [] and "container-b" not in left._args, "a place with nothing left is dropped"
