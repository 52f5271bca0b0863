"""The execute-only backend over ssh lost a command's whole output now and then: a loaded ``-n 4``
suite saw ``(0, '')`` for ``echo 18`` (1 of 50 commands in
``tests/regressions/test_handed_b34_ssh_sessions.py``). paramiko's thread put the output, the EOF,
the exit status and the close into the channel between the reader's drain and its look at
``closed``; the reader returned what it had drained: nothing. It drains once more now.

The channel is faked (when paramiko's thread runs is what the test controls); the real sshd
cases are in the B34 regression module.
"""

from __future__ import annotations

from types import SimpleNamespace

from pytest_hermes_kernel.transports.filecell.ssh_exec import SshExecBackend


class ClosesBetweenDrainAndCheck:
    """An exec channel whose command's output, EOF, status and close all arrive right after the
    reader's first drain found nothing (paramiko's thread running at that moment)."""

    def __init__(self, output: bytes) -> None:
        self._pending, self._out, self._err = output, b"", b"1234\n"  # the shim's pid line
        self._drains = 0
        self.closed = self.eof_received = False
        self.exit_status = -1

    def recv_ready(self) -> bool:
        return bool(self._out)

    def recv(self, n: int) -> bytes:
        data, self._out = self._out, b""
        return data

    def recv_stderr_ready(self) -> bool:
        if self._err:
            return True
        self._drains += 1
        if self._drains == 1:  # the first drain is over: everything arrives at once
            self._out, self.closed, self.eof_received, self.exit_status = self._pending, True, True, 0
        return False

    def recv_stderr(self, n: int) -> bytes:
        data, self._err = self._err, b""
        return data

    def exit_status_ready(self) -> bool:
        return self.exit_status >= 0

    def sendall(self, data: bytes) -> None:
        pass

    def shutdown_write(self) -> None:
        pass

    def close(self) -> None:
        self.closed = True


def test_output_that_arrives_with_the_close_is_kept() -> None:
    chan = ClosesBetweenDrainAndCheck(b"18\n")
    conn = SimpleNamespace(open_exec=lambda command: chan, usable=True, target="hermes@127.0.0.1:1",
                           unresponsive=None)
    backend = SshExecBackend(lambda: conn)

    assert backend.execute("echo 18", 10.0) == (0, "18\n")


class StatusBeforeOutput:
    """An exec channel whose exit status came first and whose output and EOF come ``late_s``
    later (sshd sent the status as it reaped the command; paramiko's thread, starved on a loaded
    machine, had not yet put the data it read after it into the channel)."""

    def __init__(self, output: bytes, late_s: float) -> None:
        import os
        import threading
        import time

        self._output, self._due = output, time.monotonic() + late_s
        self._err, self._taken = b"1234\n", False
        self._r, self._w = os.pipe()  # never written: select on the channel just waits
        self.closed, self.exit_status = False, 0
        self.status_event = threading.Event()
        self.status_event.set()

    def _arrived(self) -> bool:
        import time

        return time.monotonic() >= self._due

    @property
    def eof_received(self) -> bool:
        return self._arrived()

    def fileno(self) -> int:
        return self._r

    def recv_ready(self) -> bool:
        return self._arrived() and not self._taken

    def recv(self, n: int) -> bytes:
        self._taken = True
        return self._output

    def recv_stderr_ready(self) -> bool:
        return bool(self._err)

    def recv_stderr(self, n: int) -> bytes:
        data, self._err = self._err, b""
        return data

    def exit_status_ready(self) -> bool:
        return True

    def sendall(self, data: bytes) -> None:
        pass

    def shutdown_write(self) -> None:
        pass

    def close(self) -> None:
        import os

        if not self.closed:
            os.close(self._r)
            os.close(self._w)
        self.closed = True


def test_output_that_comes_after_the_exit_status_is_waited_for_until_eof() -> None:
    """Seen in a fresh install's full run: ``(0, '')`` for ``sleep 0.5; echo 10``, a success with
    its output lost: the reader stopped 0.2 s after the exit status once nothing more came, before
    the output and EOF that followed it. It now waits for the EOF (at most DRAIN_MAX_S)."""
    chan = StatusBeforeOutput(b"10\n", late_s=0.6)
    conn = SimpleNamespace(open_exec=lambda command: chan, usable=True, target="hermes@127.0.0.1:1",
                           unresponsive=None)

    assert SshExecBackend(lambda: conn).execute("sleep 0.5; echo 10", 10.0) == (0, "10\n")
