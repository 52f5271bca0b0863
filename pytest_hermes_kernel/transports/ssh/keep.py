"""SSH kernels kept for post-mortem (``--hermes-keep-failed``): let go, and reached again later.

An ssh runner listens on ``<kernel dir>/sock`` on its host from its start (both the kernel-server
and the spawn path), so keeping it needs no new listener: the ``keep`` frame makes the TTL its
orphan timer and the host detaches (its relay channel closes). Another process (``hermes-kernel
exec``/``attach``/``sweep --kept``) connects again with what the record's locator says and opens
a new relay channel, as after a dropped connection.

What reaching it takes is in the locator's ``reach``: the keyword options of a new
:class:`~.transport.SshTransport` (``target``, ``key_filename``, ``host_key``, ...; no kernel
server: nothing is started there). For the run's sshd container that is its published
``127.0.0.1`` port, its pinned host key and a copy of the run's private key (a 0600 file beside
the record in the per-user 0700 kept dir, :func:`~pytest_hermes_kernel.containers.kept.save_secret`,
removed with the record); the container's id is the locator's ``container_id``, so it outlives
the run while the record is unexpired, as a docker kernel's container does. For a ``target=`` host:
the target, its key file, known_hosts, host-key policy and pinned key as given (a key given only
as a ``pkey`` object is not written anywhere: the later process then authenticates as paramiko
does by default: the user's agent and default key files).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from ...containers.kept import save_secret
from ...errors import TransportLostError
from ...kernel.contract import Launched
from ..detached import SSH_KERNEL_ROOT, NullStream
from .probes import end_kernel, sshd_container_gone

if TYPE_CHECKING:
    from .transport import SshTransport

__all__ = ["attach_kept", "cleanup_kept", "kept_locator_of", "locator_of", "release"]


def locator_of(transport: SshTransport, launched: Launched) -> dict[str, Any]:
    """What another process needs to reach the kernel of ``launched`` again (JSON values; no
    side effects: for the run's sshd container, ``reach`` names the run's own key file, which
    goes with the run: :func:`kept_locator_of` is the one to record)."""
    conn = launched.extra["conn"]
    locator = {"runner_pid": launched.pid, "kernel_dir": launched.kernel_dir, "runner": launched.extra.get("runner"),
               "python": launched.extra.get("python") or transport.python, "target": str(conn.target)}
    if transport.sshd is None:
        return {**locator, "reach": _reach_target(transport)}
    record = transport.sshd.join()
    reach = {"target": f"{record['user']}@{record['host']}:{record['port']}", "key_filename": record["key_file"],
             "host_key": record["host_key"], "server": False}
    return {**locator, "container_id": record["container_id"], "target": reach["target"], "reach": reach}


def kept_locator_of(transport: SshTransport, launched: Launched) -> dict[str, Any]:
    """:func:`locator_of` for a kept kernel: for the run's sshd container, with a copy of the run's
    private key beside the record (``<kernel id>.ssh-key``, 0600) in place of the run's file.

    :raises OSError: if the key cannot be read or its copy written.
    """
    locator = locator_of(transport, launched)
    if transport.sshd is None:
        return locator
    with open(locator["reach"]["key_filename"], encoding="ascii") as fh:
        key_file = save_secret(os.path.basename(launched.kernel_dir or ""), "ssh-key", fh.read())
    return {**locator, "reach": {**locator["reach"], "key_filename": key_file}}


def _reach_target(transport: SshTransport) -> dict[str, Any]:
    reach: dict[str, Any] = {"target": str(transport.target), "host_key_policy": transport.host_key_policy,
                             "server": False}
    for name in ("key_filename", "known_hosts"):  # absolute: the record is read from any directory
        if getattr(transport, name):
            reach[name] = os.path.abspath(getattr(transport, name))
    if transport.host_key:
        reach["host_key"] = transport.host_key
    return reach


def release(transport: SshTransport, launched: Launched) -> None:
    """The runner lives on without this host: its kernel dir is no longer one the leak probe
    expects gone (the channel was closed already). Never raises."""
    conn, kdir = launched.extra.get("conn"), launched.kernel_dir
    if conn is not None and kdir:
        transport.made_dirs.seen(str(conn.target), [kdir], [])


def attach_kept(transport: SshTransport, locator: dict[str, Any]) -> Launched:
    """The launch record of the kept runner at ``locator``, with a new relay channel to it.

    ``transport`` is one made with the locator's ``reach`` options.

    :raises TransportLostError: if the record lacks what is needed, the host cannot be reached
        or the runner is gone (``permanent``).
    """
    pid, kdir, runner = (locator.get(k) for k in ("runner_pid", "kernel_dir", "runner"))
    if not (isinstance(pid, int) and isinstance(kdir, str) and isinstance(runner, str)):
        raise TransportLostError(f"the kept ssh kernel's record is incomplete: {sorted(locator)}", permanent=True)
    try:
        conn = transport.connection()
    except TransportLostError as exc:
        if sshd_container_gone(locator):  # the kernel went with it: nothing will answer again
            raise TransportLostError(f"{exc}; its sshd container {str(locator['container_id'])[:12]} is gone, "
                                     "and the kernel with it", permanent=True) from None
        raise
    extra = {"conn": conn, "python": locator.get("python") or transport.python, "runner": runner}
    transport.scripts.add(str(conn.target), extra["python"])  # the probes' where the transport's python is missing
    probe = Launched(stream=NullStream(), pid=pid, kernel_dir=kdir, extra=extra)
    stream = transport.reattach(probe)
    return Launched(stream=stream, pid=pid, kernel_dir=kdir, label=f"ssh {conn.target} pid {pid}, kept", extra=extra)


def cleanup_kept(transport: SshTransport, locator: dict[str, Any]) -> None:
    """Remove what a kept kernel that is gone for good left on its host (a runner killed by hand or
    by a sweep never removed its kernel dir): every process still carrying its kernel id ends,
    then its dir goes (``hermes-kernel sweep --kept`` calls it before it removes the record).
    Only a dir under ``~/.hermes-kernels``; never raises (a host that does not answer keeps it)."""
    kdir = locator.get("kernel_dir")
    if not isinstance(kdir, str) or f"/{SSH_KERNEL_ROOT}/" not in kdir:
        return
    try:
        conn = transport.connection()
    except (TransportLostError, OSError):
        return
    end_kernel(transport, conn, kdir, os.path.basename(kdir), "gone kept kernel")
