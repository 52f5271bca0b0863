"""The execute-only backend over ssh: one exec channel per command on a held paramiko connection.

:class:`SshExecBackend` keeps the :class:`~.backends.ExecuteBackend` contract of the other two
reference backends. It does not make a connection of its own: it asks a ``connect`` callable for
the live one each time (an :class:`~pytest_hermes_kernel.transports.ssh.transport.SshTransport`'s
connection accessor, which reconnects after a loss and reaches the run's sshd container, its pinned
host key and key file), so the keepalive checks of
:class:`~pytest_hermes_kernel.transports.ssh.connection.SshConnection` guard it too.

How a command runs (:data:`SSH_SHIM`): the exec channel starts ``sh -c <shim>``; the shim writes
its own pid to the channel's stderr, reads the command from the channel's stdin (the command is
in no argv: B43), puts ``/dev/null`` on stdin and runs the command in a child shell fed through
fd 3, with its stderr on its stdout (combined output; the shells' own notes, such as ``Killed``,
stay on the channel's stderr, which is not output). The session shell therefore always ends with
``exit``, so a command killed by signal N is 128 + N in the ``exit-status`` message (paramiko
ignores ``exit-signal``, so a signal death of the session shell itself would read as ``-1``).
A missing status (paramiko's ``-1``, a closed channel, a lost connection) is
:class:`~pytest_hermes_kernel.errors.ExitStatusUnknownError` (handed case B35).

Nothing relies on the SSH ``signal`` request (OpenSSH before 7.9 ignores it): at the timeout the
command's process group (sshd makes the session shell a group leader) is SIGKILLed from a second
exec channel, by the pid the shim reported, and the :class:`TimeoutError` says so.
"""

from __future__ import annotations

import select
import shlex
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from ...errors import ExitStatusUnknownError, TransportLostError
from .shell_io import DRAIN_IDLE_S, DRAIN_MAX_S

if TYPE_CHECKING:
    import paramiko

    from ..ssh.connection import SshConnection
    from ..ssh.transport import SshTransport

#: The session shell: pid to stderr, the command from stdin, run in a child shell (see module
#: docstring); its stdout carries the command's stdout and stderr.
SSH_SHIM = ('echo "$$" >&2; s=$(cat); exec </dev/null; '
            'printf %s "$s" | { exec 3<&0 </dev/null; sh -c \'s=$(cat <&3); exec 3<&-; eval "$s"\' 2>&1; }')
#: Seconds the kill over a second channel may take.
KILL_TIMEOUT_S = 10.0


class SshExecBackend:
    """``sh -c cmd`` over ssh exec channels (see module docstring).

    :param connect: returns the live :class:`SshConnection` (called for each command).
    :param shell: the POSIX shell the session runs.
    :param label: what :func:`repr` shows (where the commands run).
    """

    def __init__(self, connect: Callable[[], SshConnection], *, shell: str = "sh", label: str = "ssh") -> None:
        self.connect = connect
        self.shell = shell
        self.label = label

    @classmethod
    def over(cls, transport: SshTransport) -> SshExecBackend:
        """A backend on ``transport``'s connection (the run's sshd container without ``target=``)."""
        return cls(transport._connection, label=transport.describe())  # the transport's own accessor: it reconnects

    def execute(self, cmd: str, timeout: float | None) -> tuple[int, str]:
        """Run ``cmd``; see :class:`~.backends.ExecuteBackend`.

        :raises TimeoutError: if it runs longer than ``timeout`` seconds (its group is SIGKILLed).
        :raises ExitStatusUnknownError: if no exit status came (the connection broke, or the
            server sent none).
        :raises TransportLostError: if the command could not be started.
        """
        conn = self.connect()
        chan = conn.open_exec(f"{self.shell} -c {shlex.quote(SSH_SHIM)}")
        try:
            chan.sendall(cmd.encode("utf-8"))
            chan.shutdown_write()
            out, pid = self._read(conn, chan, timeout)
        except TimeoutError:
            raise
        except (OSError, EOFError) as exc:
            raise ExitStatusUnknownError(f"ssh exec on {conn.target} broke: {exc or type(exc).__name__}",
                                         returned="None") from None
        finally:
            chan.close()
        status = chan.exit_status  # paramiko's -1 when none came before the channel closed
        if not 0 <= status <= 255:
            why = conn.unresponsive or ("connection closed" if not conn.usable else "no exit-status message")
            raise ExitStatusUnknownError(f"ssh exec on {conn.target} reported no exit status ({why}); "
                                         f"the command (pid {pid or '?'}) may or may not have finished",
                                         returned=repr(status))
        return status, out.decode("utf-8", "replace")

    def _read(self, conn: SshConnection, chan: paramiko.Channel, timeout: float | None) -> tuple[bytes, str]:
        """The channel's output until the command exited and its EOF came (or :data:`DRAIN_MAX_S`
        after the exit: a background process that holds the output); ``(output, pid text)``.

        :raises TimeoutError: if the command still runs after ``timeout`` seconds (after the kill).
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        out, err = bytearray(), bytearray()
        drain_end: float | None = None
        while True:
            _drain(chan, out, err)
            now = time.monotonic()
            if drain_end is None and (chan.exit_status_ready() or not conn.usable):
                drain_end = now + DRAIN_MAX_S
            # after the exit status, the EOF (or DRAIN_MAX_S) ends the read, never a quiet spell: sshd
            # may send the status before the output it read after it, which a starved paramiko thread
            # put in the channel 0.2 s later ('(0, "")' for `echo 10`: a success with its output lost)
            if (chan.closed or (chan.eof_received and drain_end is not None)
                    or (drain_end is not None and now >= drain_end)):
                # paramiko's thread may have put the last output, its EOF and the close in the
                # channel after the drain above: read it again (a command's whole output, "18\n",
                # was lost so, 1 of 50 commands under a loaded -n 4 suite)
                _drain(chan, out, err)
                return bytes(out), _pid(err)
            if drain_end is None and deadline is not None and now >= deadline:
                raise TimeoutError(self._kill(conn, _pid(err), timeout))
            if chan.eof_received:  # select would return at once: wait for the status instead
                chan.status_event.wait(DRAIN_IDLE_S / 4)
            else:
                select.select([chan], [], [], DRAIN_IDLE_S / 4)

    def _kill(self, conn: SshConnection, pid: str, timeout: float | None) -> str:
        """SIGKILL the command's process group over a second channel; the :class:`TimeoutError` text."""
        said = f"command did not finish within {timeout} s"
        if not pid.isdigit():
            return f"{said}; its pid never arrived, so it may still run on {conn.target}"
        try:
            code, _, _ = conn.run(f"kill -KILL -- -{pid} 2>/dev/null || kill -KILL {pid}", timeout=KILL_TIMEOUT_S)
        except (TransportLostError, TimeoutError) as exc:
            return f"{said}; SIGKILL of its process group {pid} over a second channel failed: {exc}"
        how = "ended by SIGKILL of its process group" if code == 0 else f"kill exited {code} for process group"
        return f"{said}; {how} {pid} over a second ssh channel (no ssh 'signal' request is used)"

    def close(self) -> None:
        """Nothing to release: the connection belongs to whoever ``connect`` returns it from."""

    def __repr__(self) -> str:
        return f"SshExecBackend({self.label})"


def _drain(chan: paramiko.Channel, out: bytearray, err: bytearray) -> bool:
    """Move what the channel holds into ``out``/``err``; whether anything came."""
    got = False
    while chan.recv_ready():
        out += chan.recv(1 << 20)
        got = True
    while chan.recv_stderr_ready():
        err += chan.recv_stderr(1 << 16)
        got = True
    return got


def _pid(err: bytes | bytearray) -> str:
    """The pid line the shim wrote to stderr (``""`` before it came)."""
    first, newline, _ = bytes(err).partition(b"\n")
    return first.decode("ascii", "replace").strip() if newline else ""
