"""What the docker transport shows the leak checker, and how it cleans what leaked.

Listed through the engine (so an engine elsewhere, ``DOCKER_HOST``, is covered): the run's
containers that nobody holds, and inside each container this transport knows, the kernel
processes of a host and the kernel dirs it made that are still there (scanned by the
container's kernel server when one runs, else by an exec).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from ..detached import (DOCKER_KERNEL_ROOT, HOST_PROCESSES_SCRIPT, KILL_IF_SAME_SCRIPT, REAP_SCRIPT,
                        parse_existing_dirs, parse_host_processes)
from ..remote_server import forked_alive, forked_reap, probe_by_server, reap_in_one_exec

if TYPE_CHECKING:
    from ...kernel.contract import Launched
    from .transport import DockerTransport

log = logging.getLogger(__name__)


def snapshot(transport: DockerTransport, host_pid: int) -> dict[str, dict[str, str]]:
    """``{kind: {identity: description}}`` (see :meth:`Transport.leak_snapshot`)."""
    from ...containers.kept import exempt_kernel_ids
    from ...containers.sweep import unused_run_containers

    kept = exempt_kernel_ids()  # kernels kept for post-mortem outlive their host on purpose: not leaks
    found: dict[str, dict[str, str]] = {"container": unused_run_containers(transport.client, transport.run_id),
                                        "remote kernel process": {}, "remote kernel dir": {}}
    for cid in transport.hosts.all_known():
        dirs = transport.made_dirs.of(cid)
        out = _scan(transport, cid, [str(host_pid), *dirs])
        if out is None:
            continue
        for pid, start, kernel_id, cmd in parse_host_processes(out):
            if kernel_id in kept:
                continue
            found["remote kernel process"][f"docker:{cid}:{pid}:{start}:{kernel_id}"] = \
                f"pid {pid} in container {cid[:12]} (kernel {kernel_id}): {cmd}"
        existing = parse_existing_dirs(out)
        transport.made_dirs.seen(cid, dirs, existing)
        found["remote kernel dir"].update({f"docker:{cid}:{d}": f"kernel dir {d} in container {cid[:12]}"
                                           for d in existing})
    return found


def _scan(transport: DockerTransport, cid: str, args: list[str]) -> bytes | None:
    """The host-process scan's output in container ``cid``: run by the kernel server there when
    one runs (a fork, no exec: most snapshots), else by an exec as the image's user (the server's
    user too: docker's root cannot read other users' environ); ``None`` if the container is not running."""
    out = probe_by_server(transport.servers, cid, HOST_PROCESSES_SCRIPT, args)
    if out is not None:
        return out
    if not transport.container_running(cid):
        return None
    return transport.run_script(cid, HOST_PROCESSES_SCRIPT, *args, user="")[1]


def cleanup(transport: DockerTransport, kind: str, identity: str) -> None:
    """End one reported thing: remove the container, kill the process (if still the same one),
    remove the kernel dir. Never raises."""
    try:
        if kind == "container":
            transport.hosts.remove(identity)
        elif kind == "remote kernel process":
            _, cid, pid, start, _kernel = identity.split(":")
            transport.run_script(cid, KILL_IF_SAME_SCRIPT, pid, start)
        elif kind == "remote kernel dir":
            _, cid, path = identity.split(":", 2)
            if path.startswith(f"{DOCKER_KERNEL_ROOT}/"):  # never rm -rf anything but a kernel dir
                transport.run_script(cid, "import shutil, sys; shutil.rmtree(sys.argv[1])", path)
    except Exception as exc:  # noqa: BLE001 - cleanup never raises
        log.warning("could not clean leaked %s %s: %s", kind, identity, exc)


def reap(transport: DockerTransport, launched: Launched, timeout: float) -> bool:
    """``Transport.reap``: a forked runner's exit as its server saw it; else one exec that waits
    for the runner to end and then removes its kernel dir (:data:`REAP_SCRIPT`: no separate probe,
    kill and ``rm``, ~200 ms less per shutdown on the spawn path); True when it is gone."""
    if forked_reap(launched, timeout):
        return True
    cid = launched.extra["container"]
    if launched.pid is None or forked_alive(launched) is not None or not transport.container_running(cid):
        return not transport.alive(launched)
    kdir = launched.kernel_dir or ""
    dirs = [kdir] if kdir.startswith(f"{DOCKER_KERNEL_ROOT}/") and not transport.hosts.is_fresh(cid) else []
    try:
        return reap_in_one_exec(launched, timeout, dirs, lambda *args: transport.run_script(cid, REAP_SCRIPT, *args)[1])
    except Exception:  # noqa: BLE001 - cannot reach the engine: probe the usual way
        return not transport.alive(launched)
