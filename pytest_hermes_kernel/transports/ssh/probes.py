"""What the ssh transport shows the leak checker, and how it cleans what leaked.

Listed through the transport's own connection (nothing is connected for this: without a
connection there is nothing to list): its open channels, the kernel processes of a host on
the ssh host (scanned there, so a real remote host is covered), and the run's sshd containers
that no live process holds.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from ..detached import HOST_PROCESSES_SCRIPT, KILL_IF_SAME_SCRIPT, parse_host_processes

if TYPE_CHECKING:
    from .transport import SshTransport

log = logging.getLogger(__name__)


def snapshot(transport: SshTransport, host_pid: int) -> dict[str, dict[str, str]]:
    """``{kind: {identity: description}}`` (see :meth:`Transport.leak_snapshot`)."""
    found: dict[str, dict[str, str]] = {"ssh channel": {}, "remote kernel process": {}}
    conn = transport.current_connection
    if conn is not None and conn.usable:
        for chan_id, command in conn.open_channels().items():
            found["ssh channel"][f"{id(conn)}:{chan_id}"] = f"ssh channel {chan_id} to {conn.target}: {command}"
        _, out = transport.run_script(conn, HOST_PROCESSES_SCRIPT, str(host_pid))
        for pid, start, kernel_id, cmd in parse_host_processes(out):
            found["remote kernel process"][f"ssh:{pid}:{start}:{kernel_id}"] = \
                f"pid {pid} on {conn.target} (kernel {kernel_id}): {cmd}"
    if transport.sshd is not None:
        from ...containers.sweep import unused_run_containers

        found["container"] = unused_run_containers(transport.sshd.docker, transport.run_id)
    return found


def cleanup(transport: SshTransport, kind: str, identity: str) -> None:
    """End one reported thing: close the channel, kill the process (if still the same one),
    remove the container. Never raises."""
    try:
        conn = transport.current_connection
        if kind == "ssh channel" and conn is not None and identity.startswith(f"{id(conn)}:"):
            conn.close_channel(int(identity.rsplit(":", 1)[1]))
        elif kind == "remote kernel process" and conn is not None:
            _, pid, start, _kernel = identity.split(":")
            transport.run_script(conn, KILL_IF_SAME_SCRIPT, pid, start)
        elif kind == "container" and transport.sshd is not None:
            from ...containers.lifecycle import remove_container

            remove_container(identity, client=transport.sshd.docker)
    except Exception as exc:  # noqa: BLE001 - cleanup never raises
        log.warning("could not clean leaked %s %s: %s", kind, identity, exc)
