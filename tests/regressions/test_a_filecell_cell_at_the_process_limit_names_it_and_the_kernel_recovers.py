"""Found by a breaker helper (the host out of resources, 2026-12-06): a cell on a filecell kernel
run while the test process was at its process limit (a pids cgroup, ``ulimit -u``: threads count)
raised a bare ``RuntimeError: can't start new thread`` (its poll's thread), and the poll that never
started stayed listed: every later call on the kernel, once processes were free again, raised
``RuntimeError: cannot join thread before it is started`` (the kernel could not even be shut down
cleanly). A poll without a thread now counts as a failed poll: the kernel is lost with a note
naming the process limit, and the next cell once the limit is lifted runs on a fresh runner.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest_hermes_kernel
from tests.support import pids_cgroup

JOB = """
import subprocess
from pytest_hermes_kernel import start_kernel
from pytest_hermes_kernel.transports import make_transport

transport = make_transport("filecell")
held = []
try:
    kernel = start_kernel(transport, timeout=30)
    kernel.execute("x = 41")
    while True:  # the job at its pids limit
        try:
            held.append(subprocess.Popen(["sleep", "120"]))
        except OSError:
            break
    try:
        result = kernel.execute("x + 1", timeout=30)
        print("CELL", result.status, repr(result.kernel.note), flush=True)
    except Exception as exc:
        print("ERROR", type(exc).__name__, repr(str(exc)), flush=True)
    for p in held:
        p.kill()
        p.wait()
    held.clear()
    print("AFTER", kernel.execute("2 + 2", timeout=30).value, flush=True)
    kernel.shutdown()
    print("SHUT", flush=True)
finally:
    for p in held:
        p.kill()
        p.wait()
    transport.close()
"""


def test_a_filecell_cell_without_a_thread_names_the_limit_and_the_kernel_recovers(tmp_path: Path) -> None:
    (tmp_path / "job.py").write_text(JOB)
    with pids_cgroup(80) as group:
        env = {**os.environ, "GROUP": group, "PYTHONPATH": str(Path(pytest_hermes_kernel.__file__).parents[1])}
        ran = subprocess.run(["sh", "-c", f'echo $$ > "$GROUP/cgroup.procs" && exec {sys.executable} job.py'],
                             cwd=tmp_path, env=env, capture_output=True, text=True, timeout=180)
    out = ran.stdout + ran.stderr
    assert "CELL died" in ran.stdout, out  # was ERROR RuntimeError "can't start new thread"
    assert "no thread for a poll" in ran.stdout and "ulimit -u, a pids cgroup" in ran.stdout, out
    assert "AFTER 4" in ran.stdout and "SHUT" in ran.stdout, out  # was "cannot join thread before it is started"
