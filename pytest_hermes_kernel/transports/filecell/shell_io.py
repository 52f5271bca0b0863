"""How :class:`~.backends.LocalShellBackend` hands ``sh`` a command and reads what it prints.

The command goes to the shell in a memfd, which it runs as its script (:func:`script_fd`: no
``cat`` between, and in no argv that ``ps`` shows, B43); the output is read until the command has
exited and its pipe is closed or quiet (:func:`read_until_exit`, handed case B36); a command cut
short loses its whole process group (:func:`kill_group`).
"""

from __future__ import annotations

import os
import selectors
import signal
import subprocess
import time

#: Seconds the output of an exited command is still read while it keeps coming (handed case
#: B36: what was written right before the exit is never lost) ...
DRAIN_IDLE_S = 0.2
#: ... and at most, in all: a background process that holds the output cannot hold the call
#: open (docker's own exec drain is 2 s too).
DRAIN_MAX_S = 2.0
#: What the script runs before the command, on the same line (its line numbers stay): the
#: command's stdin is ``/dev/null``, as the protocol has it, not the script the shell reads.
SCRIPT_PREFIX = b"exec </dev/null; "
#: Where a process reads its own fd 0 again as a file (Linux' ``/proc/self/fd``).
SCRIPT_PATH = "/dev/fd/0"
_HAS_DEV_FD = os.path.isdir("/dev/fd")


def script_fd(cmd: str) -> int | None:
    """A memfd (offset 0) holding ``cmd`` as a shell script, for the shell's stdin: run as
    ``sh`` :data:`SCRIPT_PATH`, the shell reads its script from its own descriptor of it, and
    the script first points stdin at ``/dev/null`` (:data:`SCRIPT_PREFIX`).

    ``$(cat)`` read the command from a pipe before: a process more (fork, exec, locale), ~1.4 ms
    of CPU of every filecell cell on the 2-core reference machine, about 7 % of the cell.

    :returns: the descriptor (the caller closes it once the shell has it), or ``None`` where there
        is no ``memfd_create`` or no ``/dev/fd`` (not Linux): the caller pipes the command then.
    :raises OSError: if no memfd can be made or written (no descriptor left: ``EMFILE``).
    """
    if not _HAS_DEV_FD or not hasattr(os, "memfd_create"):
        return None
    fd = os.memfd_create("hermes-command", os.MFD_CLOEXEC)
    try:
        view = memoryview(SCRIPT_PREFIX + cmd.encode("utf-8"))
        while view:
            view = view[os.write(fd, view):]
        os.lseek(fd, 0, os.SEEK_SET)
    except BaseException:
        os.close(fd)
        raise
    return fd


def read_until_exit(proc: subprocess.Popen[bytes], timeout: float | None) -> bytes:
    """``proc``'s output until it has exited and the output is closed or quiet (see :data:`DRAIN_MAX_S`).

    :raises TimeoutError: if ``proc`` still runs after ``timeout`` seconds.
    """
    assert proc.stdout is not None
    fd = proc.stdout.fileno()
    deadline = None if timeout is None else time.monotonic() + timeout
    chunks: list[bytes] = []
    drain_end: float | None = None  # set once the command exited
    with selectors.DefaultSelector() as sel:
        sel.register(fd, selectors.EVENT_READ)
        while True:
            now = time.monotonic()
            if drain_end is None and proc.poll() is not None:
                drain_end = now + DRAIN_MAX_S
            if drain_end is None and deadline is not None and now >= deadline:
                raise TimeoutError(f"command did not finish within {timeout} s")
            wait = DRAIN_IDLE_S if drain_end is not None else 0.05
            if not sel.select(min(wait, max(0.0, (drain_end or now + wait) - now))):
                if drain_end is not None:
                    return b"".join(chunks)  # exited, and the output went quiet (or a holder keeps it open)
                continue
            data = os.read(fd, 65536)
            if not data:
                return b"".join(chunks)
            chunks.append(data)
            if drain_end is not None and time.monotonic() >= drain_end:
                return b"".join(chunks)


def read_until_closed(out_fd: int, status_fd: int, timeout: float | None) -> tuple[str, str]:
    """Read two pipes until both are closed; ``(output, status text)``.

    :raises TimeoutError: if they are still open after ``timeout`` seconds.
    """
    deadline = None if timeout is None else time.monotonic() + timeout
    chunks: dict[int, list[bytes]] = {out_fd: [], status_fd: []}
    with selectors.DefaultSelector() as sel:
        for fd in chunks:
            sel.register(fd, selectors.EVENT_READ)
        while sel.get_map():
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                raise TimeoutError(f"command did not finish within {timeout} s")
            for key, _ in sel.select(left):
                data = os.read(key.fd, 65536)
                if data:
                    chunks[key.fd].append(data)
                else:
                    sel.unregister(key.fd)
    return (b"".join(chunks[out_fd]).decode("utf-8", "replace"),
            b"".join(chunks[status_fd]).decode("ascii", "replace"))


def kill_group(proc: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    try:
        proc.wait(timeout=5.0)  # not communicate(): it would flush the closed stdin and never wait
    except subprocess.TimeoutExpired:
        pass
