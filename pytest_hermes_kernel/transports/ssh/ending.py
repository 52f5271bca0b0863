"""How the ssh transport ends a kernel runner (``alive``, ``seen_gone``, ``kill``, ``cleanup``), and
what a cleanup could not reach.

``alive()`` is ``False`` both when the runner was seen gone and when it cannot be told (a silent
host refuses the probe at once); only the first is recorded (``launched.extra["gone"]``), and only
the first makes ``seen_gone()`` ``True``: the core counts a runner dead (resets a timed-out kernel,
starts a runner in its place, confirms a shutdown) only then; a cell timed out on a silent host is
``abandoned``. ``cleanup`` never removes the kernel dir of a runner not seen gone: it kills the
runner first (one exec, only then), as the core's ``RunnerLink.discard`` kills every runner not
seen gone.
Seen: a cell ran into a paused sshd; right after the unpause the next cell replaced the runner,
``alive()`` was refused, and the cleanup (whose own try reached the host) removed the dir of a
runner that ran on, with its worker, until its orphan timer.

A cleanup that cannot reach the host leaves the dir and maybe the runner; the transport remembers
them (:attr:`SshTransport.left_behind`, by kernel id) and the kernel's next launch through it ends
every process of that kernel and removes the dir before it makes a new one (the dir has the same
path: else a kernel server refuses to make it, and the spawn path's SFTP ``mkdir`` fails).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from ...errors import ContainerGoneError, TransportLostError
from ..detached import KILL_SESSION_SCRIPT
from ..forked import forked_alive, forked_cleanup
from ..runner_identity import kernel_arg
from .probes import end_kernel, rm_kernel_dir

if TYPE_CHECKING:
    from ...kernel.contract import Launched
    from .connection import SshConnection
    from .transport import SshTransport

log = logging.getLogger(__name__)


def alive(transport: SshTransport, launched: Launched) -> bool:
    """``Transport.alive``: ``False`` also when it cannot be told (see module docstring)."""
    return runner_seen(transport, launched) is True


def seen_gone(transport: SshTransport, launched: Launched) -> bool:
    """``Transport.seen_gone``: ``True`` only for a runner seen ended (now, or by an earlier probe,
    kill or reap), never for one on a host that does not answer."""
    return runner_seen(transport, launched) is False


def runner_seen(transport: SshTransport, launched: Launched) -> bool | None:
    """The runner as the transport sees it: ``True`` it runs, ``False`` it was seen gone, ``None``
    it cannot be told (the host is silent, or the probe failed): cleanup ends it, or its orphan
    timer does."""
    if launched.pid is None or launched.extra.get("gone"):
        return False
    known = forked_alive(launched)  # its server knows, without an exec
    if known is not None:
        return known
    try:
        if transport._alive_on(None, launched):
            return True
    except ContainerGoneError:  # it went with its sshd container
        launched.extra["gone"] = True
        return False
    except (TransportLostError, TimeoutError):
        return None
    return False if launched.extra.get("gone") else None  # gone, or the probe itself failed


def kill(transport: SshTransport, launched: Launched) -> bool:
    """``Transport.kill``: SIGKILL the runner's session from an exec; True when seen gone."""
    try:
        return _kill(transport, launched)
    except (TransportLostError, TimeoutError) as exc:
        log.warning("kill of kernel runner %s over ssh failed: %s", launched.pid, exc)
        return False


def _kill(transport: SshTransport, launched: Launched) -> bool:
    """:raises TransportLostError: if the host cannot be reached (not a :class:`ContainerGoneError`:
        the runner went with its container, which is ``True``)."""
    if launched.pid is None:
        return True
    try:
        code, out = transport.run_probe(KILL_SESSION_SCRIPT, str(launched.pid), *kernel_arg(launched),
                                        python=launched.extra.get("python"), ending=True)
    except ContainerGoneError:
        launched.extra["gone"] = True
        return True
    except (TransportLostError, TimeoutError):
        launched.extra["gone"] = False
        raise
    gone = code == 0 and out.strip() == b"gone"
    launched.extra["gone"] = gone
    return gone


def cleanup(transport: SshTransport, launched: Launched) -> None:
    """``Transport.cleanup``: end a runner not seen gone, then remove its kernel dir; never raises."""
    kdir = launched.kernel_dir
    if not kdir or launched.extra.get("dir_removed"):
        return transport.made_dirs.removed(kdir or "")
    try:
        # alive() could not tell (a silent host): its dir must not go while it runs
        if not launched.extra.get("gone") and not _kill(transport, launched):
            _leave(transport, launched, kdir, "it did not end")
            return
        if forked_cleanup(launched) or rm_kernel_dir(transport._connection(probe=True, ending=True), kdir):
            transport.made_dirs.removed(kdir)  # the leak probe need not look for it (one per kernel for ever, before)
    except (TransportLostError, TimeoutError) as exc:
        if isinstance(exc, ContainerGoneError):  # the dir went with its container
            log.debug("could not remove %s over ssh: %s", kdir, exc)
        else:
            _leave(transport, launched, kdir, str(exc))


def _leave(transport: SshTransport, launched: Launched, kdir: str, why: str) -> None:
    """Remember a kernel dir (and maybe its runner) a cleanup could not end, for the kernel's next launch."""
    transport.left_behind[kdir.rsplit("/", 1)[-1]] = kdir  # a kernel dir is named by its kernel id
    log.warning("could not end kernel runner %s and remove %s over ssh: %s (the kernel's next start through this "
                "transport does, else the runner's orphan timer ends it)", launched.pid, kdir, why)


def end_left_behind(transport: SshTransport, conn: SshConnection, kernel_id: str) -> None:
    """Before a launch of ``kernel_id``: end what a cleanup of its earlier runner could not reach
    (every process of the kernel, then its dir); nothing when there is none (no exec)."""
    kdir = transport.left_behind.pop(kernel_id, None)
    if kdir is not None:
        end_kernel(transport, conn, kdir, kernel_id, "left behind by a cleanup that could not reach the host")


__all__ = ["alive", "cleanup", "end_left_behind", "kill", "runner_seen", "seen_gone"]
