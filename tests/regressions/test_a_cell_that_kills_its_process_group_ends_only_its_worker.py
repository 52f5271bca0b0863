"""Found by a fresh-user helper (2026-12-05): docs/reference.md, "What a cell can break", put a
cell's ``os.kill(0, 9)`` (its whole process group) in one row with a SIGKILL of its runner:
"the note naming the runner's end ...; ``transport_lost`` on docker and ssh". Tried on local,
docker, ssh and filecell, it is not: the worker's process group is its own, so only the worker
ends (``died``, ``signal=9``, ``reason="died"``, "killed by signal 9", every leg) and the runner
lives on to give the next cell a new worker. The docs now say so; this pins what they say.

Where the kernel has no memory cgroup of its own to read an OOM count from (a run in the root
memory cgroup: a clean-clone run started from there, 2026-12-07), the note adds that a SIGKILL
there may have been an OOM kill, as README's OOM section says; either note is right.
"""

from __future__ import annotations


def test_killing_its_own_process_group_ends_the_worker_not_the_runner(hermes_kernel):
    hermes_kernel.execute("x = 1")
    r = hermes_kernel.execute("import os; os.kill(0, 9)")
    after = hermes_kernel.execute("x")
    again = hermes_kernel.execute("6 * 7")

    assert (r.status, r.kernel.reason, r.kernel.signal) == ("died", "died", 9), r.summary()
    assert r.kernel.note in ("killed by signal 9", "killed by signal 9 (SIGKILL; possible OOM: the kernel has no memory "
                             "cgroup of its own to tell)"), r.kernel.note
    assert (after.status, after.ename, after.kernel.state_lost) == ("error", "NameError", True), after.summary()
    assert (again.status, again.value) == ("ok", "42"), again.summary()
