"""Seen (a breaker helper running the kit in CI job containers, 2026-12-06): in a job container at
its ``--pids-limit`` (64: 20 filecell kernels), the next filecell start failed with ``sh: 1: Cannot
fork`` and ``Hint: the backend needs sh, python3 ('python3') and a writable
'/tmp/hermes-filecell-0'``: all three were there. Where the fork refused was an earlier one, the
hint asked whether the backend was reachable (``BlockingIOError: [Errno 11] Resource temporarily
unavailable``), or there was none (``the launch command's exit status was not reported ('')``: the
subreaper's fork was refused, its traceback dropped). The local transport said it right: ``this
machine has run out of processes or memory``. Each of these now names the process limit.
The limit here is a pids cgroup of this host (what ``--pids-limit`` is), lowered by the job to
the tasks it holds plus a few: every count of free slots up to a start that succeeds is tried, so
the fork is refused at each step of the launch. (The job once filled the group with ``sleep``
processes until a fork was refused; in a CI run that fork was refused for another reason, the
room left was more than counted, and the step where the runner started and its worker could not
was never tried: the second test failed.)
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest_hermes_kernel
from tests.support import pids_cgroup

LEAVE_FREE = """
import os, sys

def leave_free(free):  # this job at its pids limit but for `free` tasks
    group = os.environ["GROUP"]
    with open(os.path.join(group, "pids.current")) as fh:
        holds = int(fh.read())
    with open(os.path.join(group, "pids.max"), "w") as fh:
        fh.write(str(holds + free))
    print("FREE", free, "of", holds + free)
"""

JOB = LEAVE_FREE + """
from pytest_hermes_kernel import start_kernel

leave_free(int(sys.argv[1]))
try:
    with start_kernel("filecell", python=sys.executable, timeout=30):  # (no shim: pyenv's bash retries forks)
        print("STARTED")  # (a cell may still fail at the limit: its poll's fork, said in the died cell's note)
except Exception as exc:
    print("ERROR", repr(str(exc)))
"""


def _outcomes(tmp_path: Path, job: str) -> list[str]:
    """What the job printed at each count of free slots from 1 up to the start that succeeded."""
    (tmp_path / "job.py").write_text(job)
    outcomes = []
    with pids_cgroup(40) as group:
        env = {**os.environ, "GROUP": group, "PYTHONPATH": str(Path(pytest_hermes_kernel.__file__).parents[1])}
        for free in range(1, 16):
            ran = subprocess.run(["sh", "-c", f'echo $$ > "$GROUP/cgroup.procs" && exec {sys.executable} job.py {free}'],
                                 cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
            assert ("STARTED" in ran.stdout) != ("ERROR" in ran.stdout), ran.stdout + ran.stderr
            outcomes.append(ran.stdout)
            if "STARTED" in ran.stdout:
                break
    return outcomes


def test_a_filecell_start_refused_a_fork_says_the_process_limit(tmp_path: Path) -> None:
    errors = [out for out in _outcomes(tmp_path, JOB) if "STARTED" not in out]
    assert errors, "the job's pids limit never refused a filecell start"
    for error in errors:
        assert "has run out of processes or memory" in error and "--pids-limit" in error, errors
        assert "the backend needs sh" not in error and "is what the backend calls reachable" not in error, errors


EOF_JOB = LEAVE_FREE + """
from pytest_hermes_kernel import start_kernel
from pytest_hermes_kernel.transports import make_transport
from pytest_hermes_kernel.transports.filecell.backends import LocalShellBackend

class RunnerDiedAtTheClient(LocalShellBackend):
    # the launch's other outcome: the runner took the client's connection, then died (a race)
    def execute_detached(self, cmd, timeout):  # (the launch's)
        code, out = super().execute_detached(cmd, timeout)
        return code, out.replace("@@hermes-client end gone@@", "@@hermes-client end eof@@")

transport = make_transport("filecell", backend=RunnerDiedAtTheClient())
leave_free(int(sys.argv[1]))
try:
    with start_kernel(transport, python=sys.executable, timeout=30):
        print("STARTED")
except Exception as exc:
    print("ERROR", repr(str(exc)))
finally:
    transport.close()
"""


def test_a_runner_that_died_with_the_client_attached_says_the_process_limit(tmp_path: Path) -> None:
    """Seen once in ~20 runs of the test above: where the runner's first worker fork was refused
    just after it took the launch's client, the client saw ``eof`` (not ``gone``), its log was not
    read, and the hint said ``the backend needs sh, python3 ... and a writable ...``."""
    outcomes = _outcomes(tmp_path, EOF_JOB)
    eof = [out for out in outcomes if "and ended before it said hello" in out]  # (said "client eof" before 2026-12-07)
    assert eof, outcomes  # the step where the runner started and its worker could not
    for error in eof:
        assert "has run out of processes or memory" in error and "the backend needs sh" not in error, error
