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
