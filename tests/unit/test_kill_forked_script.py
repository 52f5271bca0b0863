"""The kill of a kernel a server forked for a launch that Ctrl-C left (nobody took it) also ends
it before it has made a session of its own.

The server answers ``spawned`` right after its fork; the kernel's first step, ``setsid``, comes
later. Under load the kill (a probe: a fork of that server) ran first, found no process in the
kernel's session, and the kernel ran on for its orphan timer (a full-suite run at ``-n 4`` with
more beside it: ``test_ctrl_c_as_the_spawn_request_goes_out_ends_the_forked_kernel[docker]``
timed out after 15 s and its leak check found the kernel). Here this process plays the server:
the kernel is a child of it still in its session, the kill script a sibling of that child.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from pytest_hermes_kernel.transports.detached import KILL_FORKED_SCRIPT, KILL_SESSION_SCRIPT


@pytest.fixture
def forked():
    """A "kernel" this process forked, which has not made its own session (still in ours)."""
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        yield child
    finally:
        if child.poll() is None:
            child.kill()
        child.wait(10)


def _run(script: str, pid: int, *, via_another_parent: bool = False) -> str:
    argv = [sys.executable, "-c", script, str(pid)]
    if via_another_parent:  # the script's parent is then not the forked process's
        argv = [sys.executable, "-c", "import subprocess, sys; sys.exit(subprocess.run(sys.argv[1:]).returncode)", *argv]
    return subprocess.run(argv, capture_output=True, text=True, timeout=30, check=True).stdout.strip()


def test_a_kernel_not_yet_in_its_own_session_is_killed(forked):
    assert _run(KILL_FORKED_SCRIPT, forked.pid) == "gone"
    assert forked.wait(10) == -9


def test_a_session_kill_alone_finds_nothing_to_kill_there(forked):
    """The cause: what the unclaimed kernel's kill ran before."""
    assert _run(KILL_SESSION_SCRIPT, forked.pid) == "gone"
    assert forked.poll() is None, "the session kill ended it after all: this test no longer shows the cause"


def test_that_pid_is_killed_only_while_it_is_the_probes_parents_child(forked):
    """The server's own child, not reaped yet: never another process that has that pid by now."""
    assert _run(KILL_FORKED_SCRIPT, forked.pid, via_another_parent=True) == "gone"
    assert forked.poll() is None
