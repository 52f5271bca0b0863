"""Docker kernels kept for post-mortem (``--hermes-keep-failed``): let go, and reached again later.

A docker runner listens on ``<kernel dir>/sock`` inside its container from its start (both the
kernel-server and the spawn path), so keeping it needs no new listener: the ``keep`` frame makes
the TTL its orphan timer and the host detaches (the relay exec, or its channel of the kernel
server's stream, closes). Its container stays while the kept record names it
(:mod:`~.host`, :mod:`pytest_hermes_kernel.containers.sweep`). Another process (``hermes-kernel
exec``/``attach``/``sweep --kept``) re-attaches from the record's locator (container id, runner
pid, kernel dir, the runner file in it, the interpreter) with a new relay exec, as after a
dropped stream. The locator names the engine (``docker_host``, and the same as the transport
option ``reach`` a later process makes its transport with), so a kernel kept on an
engine other than the environment's is reached there whatever ``DOCKER_HOST`` says then.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ...errors import TransportLostError
from ...kernel.contract import Launched
from ..detached import NullStream

if TYPE_CHECKING:
    from .transport import DockerTransport

__all__ = ["NullStream", "attach_kept", "locator_of", "processes_elsewhere", "release"]


def locator_of(transport: DockerTransport, launched: Launched) -> dict[str, Any]:
    """What another process needs to reach the kernel of ``launched`` again (JSON values)."""
    return {"runner_pid": launched.pid, "kernel_dir": launched.kernel_dir, "container_id": launched.extra["container"],
            "runner": launched.extra.get("runner"), "python": launched.extra.get("python") or transport.python,
            "docker_host": transport.engine, "reach": {"docker_host": transport.engine},
            "container_started": launched.extra.get("started")}


def release(transport: DockerTransport, launched: Launched) -> None:
    """The runner lives on without this host: its kernel dir is no longer one the leak probe
    expects gone (the channel was closed already). Never raises."""
    cid, kdir = launched.extra.get("container"), launched.kernel_dir
    if cid and kdir:
        transport.made_dirs.seen(cid, [kdir], [])


def attach_kept(transport: DockerTransport, locator: dict[str, Any]) -> Launched:
    """The launch record of the kept runner at ``locator``, with a new relay exec to it.

    :raises TransportLostError: if the record lacks what is needed, the container stopped or
        the runner is gone (all ``permanent``).
    """
    cid, pid, kdir, runner = (locator.get(k) for k in ("container_id", "runner_pid", "kernel_dir", "runner"))
    if not (isinstance(cid, str) and isinstance(pid, int) and isinstance(kdir, str) and isinstance(runner, str)):
        raise TransportLostError(f"the kept docker kernel's record is incomplete: {sorted(locator)}", permanent=True)
    extra = {"container": cid, "python": locator.get("python") or transport.python, "runner": runner,
             "engine": transport.engine, "started": locator.get("container_started")}
    transport.scripts.add(cid, extra["python"])  # the probes' interpreter where the transport's is missing
    probe = Launched(stream=NullStream(), pid=pid, kernel_dir=kdir, extra=extra)
    stream = transport.reattach(probe)
    return Launched(stream=stream, pid=pid, kernel_dir=kdir, label=f"docker {cid[:12]} pid {pid} on {transport.engine}, kept", extra=extra)


def processes_elsewhere(cls: type[DockerTransport], kernel_id: str, locator: dict[str, Any]) -> list[str]:
    """The live processes of a kernel whose locator names another engine than the asking
    transport's (e.g. a host harness's kernel on the environment's engine), asked there through
    a transport of class ``cls`` on that engine, made for the question.

    :raises TransportLostError: if that engine cannot be asked.
    :raises TransportUnavailableError: if it does not answer.
    """
    transport = cls(docker_host=str(locator["docker_host"]), server=False)
    try:
        return transport.kernel_processes(kernel_id, locator)
    finally:
        transport.close()
        transport.client.close()
