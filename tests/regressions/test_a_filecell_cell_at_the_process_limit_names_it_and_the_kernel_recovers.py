"""Found by a breaker helper (the host out of resources, 2026-12-06): a cell on a filecell kernel
run while the test process was at its process limit (a pids cgroup, ``ulimit -u``: threads count)
raised a bare ``RuntimeError: can't start new thread`` (its poll's thread), and the poll that never
started stayed listed: every later call on the kernel, once processes were free again, raised
``RuntimeError: cannot join thread before it is started`` (the kernel could not even be shut down
cleanly). A poll without a thread now counts as a failed poll: the kernel is lost with a note
naming the process limit, and the next cell once the limit is lifted runs on a fresh runner.

Seen next (session 19, once in 6 runs): where the poll's thread got the last free slot, the thread
it runs the backend's command on got none, each poll failed the same way, and the note said ``3
polls failed in a row; last: RuntimeError: can't start new thread``, naming no limit. Now it does.

The job runs in a pids cgroup of its own, its limit lowered before the cell to the tasks it holds
(``poll``: the poll's own thread refused) or one more (``backend-call``: the thread of its backend
call refused). (It once filled the group with ``sleep`` processes until a fork was refused: a
thread that ended after the fill left room for the poll's thread, and the second case came by
chance.)
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import pytest_hermes_kernel
from tests.support import pids_cgroup

JOB = """
import os, sys, threading, time
from pytest_hermes_kernel import start_kernel
from pytest_hermes_kernel.transports import make_transport

GROUP = os.environ["GROUP"]
def limit(value):
    with open(os.path.join(GROUP, "pids.max"), "w") as fh:
        fh.write(str(value))
def settled():  # the last cell's poll and backend call threads ended, in the kernel too (not just Python)
    return (not [t for t in threading.enumerate() if t.name.startswith("hermes-filecell")]
            and len(os.listdir("/proc/self/task")) == threading.active_count())
def at_limit(free):  # the job at its pids limit (threads count) but for `free` tasks
    deadline = time.monotonic() + 30
    while not settled():  # a thread that ended after the limit was set would leave room
        if time.monotonic() > deadline:
            raise SystemExit(f"threads left: {threading.enumerate()}")
        time.sleep(0.01)
    while True:  # what it holds counted again, in case a task ended as it was set
        with open(os.path.join(GROUP, "pids.current")) as fh:
            held = int(fh.read())
        limit(held + free)
        with open(os.path.join(GROUP, "pids.current")) as fh:
            if int(fh.read()) == held:
                return

transport = make_transport("filecell")
try:
    kernel = start_kernel(transport, timeout=30)
    kernel.execute("x = 41")
    at_limit(int(sys.argv[1]))
    try:
        result = kernel.execute("x + 1", timeout=30)
        print("CELL", result.status, repr(result.kernel.note), flush=True)
    except Exception as exc:
        print("ERROR", type(exc).__name__, repr(str(exc)), flush=True)
    limit("max")
    print("AFTER", kernel.execute("2 + 2", timeout=30).value, flush=True)
    kernel.shutdown()
    print("SHUT", flush=True)
finally:
    limit("max")
    transport.close()
"""


@pytest.mark.parametrize("free", [0, 1], ids=["poll", "backend-call"])
def test_a_filecell_cell_without_a_thread_names_the_limit_and_the_kernel_recovers(tmp_path: Path, free: int) -> None:
    (tmp_path / "job.py").write_text(JOB)
    with pids_cgroup(80) as group:
        env = {**os.environ, "GROUP": group, "PYTHONPATH": str(Path(pytest_hermes_kernel.__file__).parents[1])}
        ran = subprocess.run(["sh", "-c", f'echo $$ > "$GROUP/cgroup.procs" && exec {sys.executable} job.py {free}'],
                             cwd=tmp_path, env=env, capture_output=True, text=True, timeout=180)
    out = ran.stdout + ran.stderr
    assert "CELL died" in ran.stdout, out  # was ERROR RuntimeError "can't start new thread"
    assert "no thread for a poll" in ran.stdout and "ulimit -u, a pids cgroup" in ran.stdout, out
    assert "AFTER 4" in ran.stdout and "SHUT" in ran.stdout, out  # was "cannot join thread before it is started"
