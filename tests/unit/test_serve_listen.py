"""``serve --listen``, the start of a runner on a docker or ssh host without a kernel server,
run here as such a host's exec runs it (kernel/runner/serve.py): the exec ends at once with
status 0 and ``ready <pid>``; the daemon leads its own session, writes its pid file, sends its
fds 1 and 2 to a 0600 log and serves an attaching client, also when the exec left fd 2 closed.
Written against the survivors of the mutation run of ``serve.py`` (issue #13).
"""

from __future__ import annotations

import json
import os
import signal
import socket
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_hermes_kernel.kernel.runner.frames import FrameDecoder, encode_frame
from pytest_hermes_kernel.procs import pid_alive
from tests.support import wait_until

TOKEN = "t0ken-for-this-test"


def _start(kdir: Path, *, close_stderr: bool = False, log: bool = True) -> tuple[subprocess.CompletedProcess[str], int]:
    config = {"token": TOKEN, "pidfile": str(kdir / "pid"), "orphan_timeout": 30}
    if log:
        config["log"] = str(kdir / "log")
    argv = [sys.executable, "-m", "pytest_hermes_kernel.kernel.runner", "serve", "--listen", str(kdir / "sock")]
    if close_stderr:  # as an exec that leaves fd 2 closed: the shell's `2>&-`
        argv = ["sh", "-c", 'exec "$@" 2>&-', "sh", *argv]
    done = subprocess.run(argv, input=json.dumps(config), capture_output=True, text=True, timeout=30, check=False)
    assert done.stdout.startswith("ready "), (done.returncode, done.stdout, done.stderr)
    pid = int(done.stdout.split()[1])
    STARTED.append(pid)
    return done, pid


def _hello(path: Path) -> dict:
    """Attach to the daemon as a host does and return its hello."""
    with socket.socket(socket.AF_UNIX) as sock:
        sock.settimeout(10)
        sock.connect(str(path))
        sock.sendall(encode_frame({"type": "attach", "token": TOKEN, "pending": []}))
        decoder = FrameDecoder()
        while (frame := decoder.next_frame()) is None:
            data = sock.recv(65536)
            assert data, "the daemon closed the channel before its hello"
            decoder.feed(data)
        return frame[0]


STARTED: list[int] = []


@pytest.fixture
def kdir(tmp_path: Path):
    """A 0700 kernel dir; every daemon started (by its ``ready`` pid) is ended after the test."""
    path = tmp_path / "k"
    path.mkdir(mode=0o700)
    yield path
    while STARTED:
        pid = STARTED.pop()
        if pid_alive(pid):
            os.kill(pid, signal.SIGTERM)  # the supervisor ends its worker, then itself
        wait_until(lambda: not pid_alive(pid), 10.0, what=f"daemon {pid} to end")


def _fd_target(pid: int, fd: int) -> str:
    return os.readlink(f"/proc/{pid}/fd/{fd}")


def test_the_exec_ends_at_once_with_status_0_and_the_daemon_serves_with_a_private_log(kdir: Path):
    done, pid = _start(kdir)

    assert done.returncode == 0 and done.stdout == f"ready {pid}\n"
    assert _hello(kdir / "sock")["pid"] == pid  # the daemon has set itself up (after `ready`)
    # its pid and the pid namespace it is a pid of (a sweep of another namespace leaves it alone)
    assert os.getsid(pid) == pid and (kdir / "pid").read_text() == f"{pid} {os.readlink('/proc/self/ns/pid')}\n"
    assert stat.S_IMODE((kdir / "log").stat().st_mode) == 0o600
    assert _fd_target(pid, 1) == _fd_target(pid, 2) == str(kdir / "log")  # not the exec's finished pipe


def test_a_daemon_without_a_log_sends_its_output_to_dev_null(kdir: Path):
    _, pid = _start(kdir, log=False)

    assert _hello(kdir / "sock")["pid"] == pid
    assert _fd_target(pid, 1) == _fd_target(pid, 2) == os.devnull


def test_an_exec_that_left_fd_2_closed_still_gets_a_daemon_that_serves_and_logs(kdir: Path):
    done, pid = _start(kdir, close_stderr=True)

    assert done.returncode == 0
    assert _hello(kdir / "sock")["pid"] == pid
    assert _fd_target(pid, 2) == str(kdir / "log")
