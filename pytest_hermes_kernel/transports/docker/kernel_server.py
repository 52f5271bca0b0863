"""The docker transport's kernel servers: one per container and interpreter, started with one exec.

The server (``kernel/runner/server_remote.py``) runs as the container's exec user from its own
0700 dir ``/tmp/hermes-kernels/server-<random>`` (the runner file, put there with one
``put_archive``; its log), with the same fixed launch environment as a spawned runner, its
``HERMES_KERNEL_ID`` being the slot each forked kernel writes its own id over. Its exec's
hijacked socket is the stream every kernel of this transport in that container rides
(:class:`~..remote_server.MuxStream`): a kernel start is one message, not three execs. A kernel
dir it makes is ``/tmp/hermes-kernels/<kernel_id>`` as on the spawn path, with a link to the
runner file, so re-attach (a relay exec), kill and the probes work the same on both paths.
"""

from __future__ import annotations

import io
import json
import tarfile
import time
import uuid
from typing import Any, Protocol

from ...errors import KernelServerUnavailable
from ...kernel.contract import Launched, LaunchSpec
from ...kernel.runner.environ import SERVER_KERNEL_ID
from ..detached import DOCKER_KERNEL_ROOT, launch_env, runner_config
from ..far_records import MadeDirs
from ..remote_server import RemoteServer, stat_says_stopped
from ..server_pool import ServerPool
from ..runner_zipapp import runner_zipapp
from .stream import DockerExecStream

KERNEL_ROOT = DOCKER_KERNEL_ROOT
SERVER_DIR_PREFIX = "server-"
#: Seconds of silence on a server's stream between container state checks (it is silent while idle).
SERVER_STATE_POLL_S = 5.0


class DockerSide(Protocol):
    """What the servers need of the docker transport."""

    api: Any
    engine: str
    python: str
    orphan_timeout: float | None
    mem_limit_bytes: int | None
    made_dirs: MadeDirs

    def _put_runner(self, container_id: str, dirname: str) -> None: ...

    def _end_failed_launch(self, container_id: str, kdir: str, kernel_id: str) -> None: ...

    def container_running(self, container_id: str) -> bool: ...

    def _run(self, container_id: str, argv: list[str], *, user: str = "root",
             probe: bool = False) -> tuple[int | None, bytes, bytes]: ...


def server_pool(transport: DockerSide, idle_timeout: float | None) -> ServerPool:
    """The pool of ``transport``'s servers (see module docstring)."""
    return ServerPool(lambda cid, python: start_server(transport, cid, python, idle_timeout), lends_probes=True)


def start_server(transport: DockerSide, container_id: str, python: str, idle_timeout: float | None) -> RemoteServer:
    """Start a kernel server in the container with one exec and wait for its hello.

    :raises KernelServerUnavailable: if it cannot be started or does not answer.
    """
    name = f"{SERVER_DIR_PREFIX}{uuid.uuid4().hex[:16]}"
    sdir = f"{KERNEL_ROOT}/{name}"
    runner = f"{sdir}/{runner_zipapp().name}"
    api = transport.api
    try:
        transport._put_runner(container_id, name)
        exec_id = api.exec_create(container_id, [python, "-B", runner, "server", "--stdio"], stdin=True, stdout=True,
                                  stderr=True, environment=launch_env(SERVER_KERNEL_ID), workdir=sdir)["Id"]
        stream = DockerExecStream(api.exec_start(exec_id, socket=True), state_poll_s=SERVER_STATE_POLL_S,
                                  container_running=lambda: transport.container_running(container_id))
    except Exception as exc:  # noqa: BLE001 - any engine failure: the spawn path may still work
        raise KernelServerUnavailable(f"could not start a kernel server in {container_id[:12]}: "
                                      f"{type(exc).__name__}: {exc}") from None
    config = {"idle_timeout": idle_timeout, "server_dir": sdir, "runner": runner, "log": f"{sdir}/server.log",
              "spare": transport.mem_limit_bytes is None}  # a spare's pages would count against a limit
    return RemoteServer(stream, name=f"docker {container_id[:12]}", config=config)


def fork_in_container(transport: DockerSide, pool: ServerPool, container_id: str, spec: LaunchSpec) -> Launched:
    """A kernel forked by the container's server (see module docstring).

    :raises KernelServerUnavailable: if no server could fork it.
    """
    python = spec.python or transport.python
    kdir = f"{KERNEL_ROOT}/{spec.kernel_id}"
    config: dict[str, Any] = json.loads(runner_config(spec, kdir, transport.orphan_timeout))
    transport.made_dirs.add(container_id, kdir)  # as on the spawn path: the leak probe checks it is gone
    try:
        pid, stream, runner, server = pool.spawn(container_id, python, lambda _server: config, spec.start_timeout,
                                                 frozen=lambda server: server_stopped(transport, container_id, server))
    except KernelServerUnavailable:  # the server may have forked it before it went: nothing may stay
        transport._end_failed_launch(container_id, kdir, spec.kernel_id)
        raise
    return Launched(stream=stream, pid=pid, kernel_dir=kdir,
                    label=f"docker {container_id[:12]} pid {pid} on {transport.engine}, forked by kernel server {server.pid}",
                    extra={"container": container_id, "python": python, "runner": runner, "server": server,
                           "engine": transport.engine})


def server_stopped(transport: DockerSide, container_id: str, server: RemoteServer) -> bool:
    """Whether the container's kernel server is stopped (SIGSTOP, a debugger): it answers nothing
    until continued, and a start waited ``SPAWN_TIMEOUT_S`` (15 s) for it. Never raises."""
    try:
        code, out, _ = transport._run(container_id, ["cat", f"/proc/{server.pid}/stat"], probe=True)
    except Exception:  # noqa: BLE001 - cannot tell: not seen stopped
        return False
    return server.pid is not None and code == 0 and stat_says_stopped(out)


def put_runner(api: Any, container_id: str, owner: tuple[int, int], dirname: str) -> None:
    """Put the runner file into a new 0700 dir ``KERNEL_ROOT/<dirname>`` owned by ``owner`` (uid, gid)."""
    api.put_archive(container_id, KERNEL_ROOT.rsplit("/", 1)[0] or "/", runner_archive(dirname, *owner))


def runner_archive(kernel_id: str, uid: int, gid: int) -> bytes:
    """The tar ``put_archive`` unpacks in ``/tmp``: the kernel root (0711), the kernel dir (0700)
    and the runner file (0600), owned by ``uid``/``gid`` (B45).

    Only a directory or a regular file, each with a plain relative name (no ``..``, no absolute
    path, no link of any kind) and no setuid, setgid or sticky bit: what is unpacked cannot land
    outside the kernel dir or gain privileges. The engine unpacks it in the container's own
    root, and replaces a symlink a cell may have put where the kernel root goes.
    """
    root, app = KERNEL_ROOT.rsplit("/", 1)[1], runner_zipapp()
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for name, mode, data in ((root, 0o711, None), (f"{root}/{kernel_id}", 0o700, None),
                                 (f"{root}/{kernel_id}/{app.name}", 0o600, app.data)):
            info = tarfile.TarInfo(name)
            info.mode, info.uid, info.gid, info.mtime = mode, uid, gid, int(time.time())
            info.type = tarfile.DIRTYPE if data is None else tarfile.REGTYPE
            info.size = 0 if data is None else len(data)
            tar.addfile(info, None if data is None else io.BytesIO(data))
    return buf.getvalue()
