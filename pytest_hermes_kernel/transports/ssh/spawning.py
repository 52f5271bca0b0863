"""The ssh transport's spawn path in words: the shell commands that start and reach a kernel runner
with execs, and what a user reads when such a start is refused (a closed transport) or fails.
"""

from __future__ import annotations

import shlex
from typing import Protocol

from ...errors import CLOSED_TRANSPORT_HINT, KernelStartError
from ...kernel.contract import LaunchSpec
from ..detached import SOCKET_NAME, launch_env, parse_ready, runner_config
from .address import NPROC_HINT, runs_no_command
from .connection import SshConnection

#: Seconds the spawn's exec waits for the runner's ``ready <pid>`` line.
READY_TIMEOUT = 30.0


class Closable(Protocol):
    closed: bool


class Spawner(Protocol):
    orphan_timeout: float | None


def refuse_if_closed(transport: Closable, *, during: bool = False) -> None:
    """A closed ssh transport starts no kernel, on either path, whatever keeps its host up (another
    transport of the run that holds the sshd container, a ``target=`` host): as docker's
    ``KernelHosts.refuse_if_closed``. The kernel-server path started one (a kernel nobody ended
    with the transport), the spawn path said it was closed "during the kernel's start".

    :param during: the start began before the close (its fork, its kernel dir, its runner's exec).
    :raises KernelStartError: if ``transport.close()`` was called, with :data:`CLOSED_TRANSPORT_HINT`.
    """
    if transport.closed:
        what = "was closed during the kernel's start" if during else "was closed: it starts no kernel any more"
        raise KernelStartError(f"this ssh transport {what}\n{CLOSED_TRANSPORT_HINT}")


def was_closed(transport: Closable) -> bool:
    """Whether ``transport.close()`` was called (:meth:`~pytest_hermes_kernel.kernel.contract.Transport.was_closed`)."""
    return transport.closed


def start_runner(transport: Spawner, conn: SshConnection, runner: str, kdir: str, spec: LaunchSpec, python: str) -> int:
    """Start ``runner`` (``serve --listen <kdir>/sock``) with one exec, its config on stdin; the pid it reports.

    :param python: the interpreter on the host that runs it.
    :raises KernelStartError: if it did not report ready: its cwd could not be entered, or what
        its exit status and output say (:func:`not_ready`).
    :raises TransportLostError: if the connection fails meanwhile.
    """
    q = shlex.quote
    exports = " ".join(f"{name}={q(value)}" for name, value in launch_env(spec.kernel_id).items())
    command = (f"{enter(spec.cwd or kdir)} && export {exports} && "
               f"exec {q(python)} -B {q(runner)} serve --listen {q(kdir + '/' + SOCKET_NAME)}")
    code, out, err = conn.run(command, stdin=runner_config(spec, kdir, transport.orphan_timeout), timeout=READY_TIMEOUT)
    pid = parse_ready(out)
    if pid is None and code == CWD_FAILED:  # the shell's own words differ (bash, dash): said alike, as forked
        raise KernelStartError(f"ssh transport: cannot enter the working directory cwd={spec.cwd!r} on "
                               f"{conn.target}: {err.decode('utf-8', 'replace').strip()}")
    if pid is None:
        raise KernelStartError(not_ready(conn, code, out, err, python))
    return pid


#: The exit status of a spawn whose ``cd`` into the kernel's working directory failed.
CWD_FAILED = 91


def enter(directory: str) -> str:
    """``cd directory`` in any POSIX shell; if it fails, why on stderr in the words Python's
    ``os.chdir`` uses (bash's and dash's differ), and exit status :data:`CWD_FAILED`."""
    where = shlex.quote(directory)
    return (f"{{ cd {where} 2>/dev/null || {{ if [ ! -e {where} ]; then w='No such file or directory'; "
            f"elif [ ! -d {where} ]; then w='Not a directory'; else w='Permission denied'; fi; "
            f"echo \"$w\" >&2; exit {CWD_FAILED}; }}; }}")


def not_ready(conn: SshConnection, code: int | None, out: bytes, err: bytes, python: str) -> str:
    """What a user reads when ``serve --listen`` did not print its ``ready`` line: a host that runs no
    command as given (an sftp-only login: 'python3 ran' was wrong there) is told by one ``echo``."""
    if code not in (126, 127) and (refused := runs_no_command(conn.run)[0]):
        return f"ssh transport: cannot start the kernel runner on {conn.target}{refused}"
    return (f"the kernel runner on {conn.target} did not report ready (exit status {code}): stdout {out[-300:]!r}; "
            f"stderr {err[-1000:].decode('utf-8', 'replace')!r}\n"
            + (NPROC_HINT if b"BlockingIOError" in err else _start_hint(code, python)))


def _start_hint(code: int | None, python: str) -> str:
    """What to check when ``serve --listen`` did not print its ``ready`` line."""
    if code == 127:
        return f"Hint: {python!r} was not found on the ssh host's PATH; pass python= the interpreter's path."
    if code == 126:
        return f"Hint: {python!r} on the ssh host is not executable by the login user."
    if code is None:
        return "Hint: the ssh channel closed before the command ended; is the host or its sshd going down?"
    return f"Hint: {python!r} ran but the runner did not start; its stderr above says why."


def relay_command(python: str, runner: str, kdir: str) -> str:
    """The exec that is a kernel's channel: the runner file's ``relay`` to ``<kdir>/sock``; from inside
    ``kdir`` when that path is over the 107 bytes a unix socket address holds (a home of 54 bytes or more)."""
    q = shlex.quote
    sock = f"{kdir}/{SOCKET_NAME}"
    if len(sock.encode("utf-8", "surrogateescape")) <= 107:
        return f"exec {q(python)} -B {q(runner)} relay {q(sock)}"
    return f"cd {q(kdir)} && exec {q(python)} -B {q(runner)} relay {SOCKET_NAME}"

