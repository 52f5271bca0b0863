"""Seen (a breaker helper running the kit in CI job containers, 2026-12-06): the plugin's promise
that a second SIGTERM ends the run at once (the first tears it down like Ctrl-C) did not hold where
pytest is pid 1 (a container's command without ``--init``, ``unshare --pid --fork``): the first
SIGTERM put the default action back, and Linux drops a signal a namespace's pid 1 does not handle.
A run whose teardown hung (a fixture's cleanup waiting on something gone) was still running 30 s
after ``docker kill -s TERM`` twice, until docker's SIGKILL; under ``--init`` (pytest not pid 1)
it ended 0.25 s after the second, exit status 143. As pid 1 it now ends the same way.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

from tests import namespaced

INNER = namespaced.WAIT_FOR + """
import pytest


@pytest.fixture
def hanging_teardown():
    yield
    (OUT / "teardown").write_text(str(os.getpid()))
    time.sleep(120)  # a cleanup waiting on something that is gone


def test_waits(hermes_kernel, hanging_teardown):
    (OUT / "running").write_text(str(os.getpid()))
    hermes_kernel.execute("import time; time.sleep(120)", timeout=180)
"""


def _temp(tmp_path: Path) -> str:
    """The inner run's temp dir: a run killed at once leaves its kernel server's dir (its server,
    in the namespace, is killed with its pid 1), which stayed in /tmp for good (one a run)."""
    (tmp_path / "tmp").mkdir()
    return str(tmp_path / "tmp")


def _deadline(what: str, done, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while not done():
        assert time.monotonic() < deadline, what
        time.sleep(0.05)


def test_a_second_sigterm_ends_the_run_at_once_when_pytest_is_pid_1(tmp_path: Path) -> None:
    out = namespaced.prepare(tmp_path, INNER)
    proc = namespaced.start(tmp_path, namespaced.pytest_command("test_inner.py"), KB_OUT=str(out), TMPDIR=_temp(tmp_path))
    try:
        _deadline("the inner test never ran", lambda: (out / "running").exists() or proc.poll() is not None, 120)
        assert (out / "running").read_text() == "1", "the inner pytest is not its namespace's pid 1"
        with open(f"/proc/{proc.pid}/task/{proc.pid}/children") as fh:
            pytest_pid = int(fh.read().split()[0])  # unshare's child: pid 1 in the namespace
        os.kill(pytest_pid, signal.SIGTERM)
        _deadline("the first SIGTERM did not tear the run down", lambda: (out / "teardown").exists(), 30)
        os.kill(pytest_pid, signal.SIGTERM)
        _deadline("the run went on after a second SIGTERM", lambda: proc.poll() is not None, 10)
        output = proc.communicate()[0]
        assert proc.returncode == 128 + signal.SIGTERM, output[-3000:]
    finally:
        namespaced.stop([proc], out / "go")


AT_EXIT = namespaced.WAIT_FOR + """
import atexit


def _slow_exit():  # what runs after pytest's end: the kit's exit hook closing transports, a user's own
    (OUT / "exiting").write_text(str(os.getpid()))
    time.sleep(120)


def test_passes():
    atexit.register(_slow_exit)
"""


def test_a_sigterm_after_the_run_ended_ends_a_pytest_that_is_pid_1(tmp_path: Path) -> None:
    """After pytest's end (its SIGTERM handler handed back) a pid 1 still exiting (an exit hook
    closing the run's containers, slow) dropped every SIGTERM, still running 10 s after one; elsewhere
    the default kills it at once (exit status 143). As pid 1 it now ends the same way."""
    out = namespaced.prepare(tmp_path, AT_EXIT)
    proc = namespaced.start(tmp_path, namespaced.pytest_command("test_inner.py"), KB_OUT=str(out), TMPDIR=_temp(tmp_path))
    try:
        _deadline("the inner run never reached its exit", lambda: (out / "exiting").exists() or proc.poll() is not None,
                  120)
        assert (out / "exiting").read_text() == "1", "the inner pytest is not its namespace's pid 1"
        with open(f"/proc/{proc.pid}/task/{proc.pid}/children") as fh:
            pytest_pid = int(fh.read().split()[0])
        os.kill(pytest_pid, signal.SIGTERM)
        _deadline("the exiting run went on after a SIGTERM", lambda: proc.poll() is not None, 10)
        output = proc.communicate()[0]
        assert proc.returncode == 128 + signal.SIGTERM and "1 passed" in output, output[-3000:]
    finally:
        namespaced.stop([proc], out / "go")
