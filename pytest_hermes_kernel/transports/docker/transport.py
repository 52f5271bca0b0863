"""Docker transport: kernel runners detached inside a kernel host container, reached by exec.

One kernel: the runner file is copied into a 0700 kernel dir ``/tmp/hermes-kernels/<kernel_id>``
(``put_archive``, owned by the container's user), started with ``docker exec`` as
``python3 -B <dir>/hermes-runner-<hash>.pyz serve --listen <dir>/sock`` (config JSON on stdin,
the kernel's environment in it: the exec adds only ``HERMES_KERNEL_ID`` to the container's own
environment; it daemonizes into its own session and prints ``ready <pid>``), then attached through a second
exec running ``<runner file> relay <dir>/sock`` whose hijacked socket is the channel
(:class:`~.docker_stream.DockerExecStream`). A broken stream is re-attached with a new relay
exec; the runner keeps its state and replays the unacknowledged result. When nobody is attached
for ``orphan_timeout`` seconds (the host died) the runner kills its worker and exits. A kernel kept
for post-mortem (``--hermes-keep-failed``) takes its TTL as that timer and is reached again from
another process by the same relay exec (:mod:`.keep`).

Docker cannot signal or kill an exec (moby/moby#35703), so nothing relies on the exec client:
interrupts travel on the channel (the supervisor signals the worker's group inside the
container) and :meth:`DockerTransport.kill` SIGKILLs the runner's whole session from a new exec.

Containers (``network none``, labelled by :mod:`pytest_hermes_kernel.containers.labels`) are
chosen and ended by :class:`~.host.KernelHosts`: the run's shared one (default) or one fresh
container per kernel (``container="fresh"``).
"""

from __future__ import annotations

import logging
import re
import weakref
from typing import TYPE_CHECKING, Any, ClassVar

from ...errors import ConfigError, KernelStartError, TransportLostError, TransportUnavailableError
from ...kernel.contract import Launched, LaunchSpec, Transport
from .stream import DockerExecStream
from ..detached import (KILL_KERNEL_SCRIPT, LOG_TAIL_LINES, SCAN_END_SH, SIGNAL_SCRIPT, SOCKET_NAME,
                        launch_env, parse_ready, runner_config, until_complete)
from ..far_records import LeftBehind, MadeDirs
from ...kernel.options import check_options
from ..runner_zipapp import runner_zipapp
from ...containers.engines import (check_answers, disk_full_hint, engine_client, engine_url, is_full_container_id,
                                   starting_on)
from ...containers.lifecycle import container_log
from ...containers.reuse import ReusePolicy
from ...containers.sharing import current_run_id, refuse_unsafe_run_files
from ..local_server import DEFAULT_SERVER_IDLE_TIMEOUT_S
from ..forked import forked_cleanup, forked_exit_status, with_fallback
from . import keep, probes
from .files import DockerFiles
from .host import ContainerMode, KernelHosts, container_for_launch, not_ready_hint, refuse_if_paused
from .kernel_server import KERNEL_ROOT, fork_in_container, put_runner, server_pool
from ..script_pythons import ScriptPythons

if TYPE_CHECKING:
    import docker

#: Seconds for ``serve --listen`` to print ``ready`` (a cold python start in a busy container).
READY_TIMEOUT = 30.0

log = logging.getLogger(__name__)
#: How docker refuses an exec whose working directory cannot be entered; group 1: why.
_CHDIR_FAILED = re.compile(rb'chdir to cwd \(".*"\) set in config\.json failed: ([a-z ]+)')


class DockerTransport(Transport):
    """Kernels inside a kernel host container (see module docstring).

    :param image: image to run; ``None`` builds/uses ``hermes-kernel-host:latest``
        (:func:`pytest_hermes_kernel.containers.images.ensure_image`).
    :param container: ``"shared"`` (one per run and options) or ``"fresh"`` (one per kernel).
    :param mem_limit_bytes: container memory limit (swap limited to the same); ``None``: none.
    :param cpus: container CPU quota in cores; ``None``: none.
    :param orphan_timeout: seconds a runner lives with no host attached; ``None`` keeps the
        kernel option's value (``KernelOptions.orphan_timeout``).
    :param python: interpreter inside the container.
    :param run_id: groups shared containers; default :func:`~.sharing.current_run_id`.
    :param server: fork kernels from a kernel server in the shared container (:mod:`.kernel_server`);
        ``False`` starts every runner with its own execs (the spawn path, also used for fresh containers).
    :param server_idle_timeout: seconds a server without requests and kernels lives on.
    :param reuse: keep the shared container between runs (``--hermes-reuse``; :mod:`.host`); ``None``: off.
    :param docker_host: the engine's URL (``unix:///...``, ``tcp://...``); ``None``: the environment's
        (``DOCKER_HOST``). Every container, exec, sweep and probe of this instance is on that engine.
    :raises ConfigError: if ``container`` is not ``shared`` or ``fresh``, or ``docker_host`` is no engine URL.
    :raises TransportUnavailableError: if the docker engine does not answer (the message names it).
    """

    name: ClassVar[str] = "docker"
    reattachable: ClassVar[bool] = True
    keepable: ClassVar[bool] = True  # post-mortem: :mod:`.keep`

    def __init__(self, *, image: str | None = None, container: ContainerMode = "shared",
                 mem_limit_bytes: int | None = None, cpus: float | None = None,
                 orphan_timeout: float | None = None, python: str = "python3", run_id: str | None = None,
                 server: bool = True, server_idle_timeout: float | None = DEFAULT_SERVER_IDLE_TIMEOUT_S,
                 reuse: ReusePolicy | None = None, docker_host: str | None = None) -> None:
        if container not in ("shared", "fresh"):
            raise ConfigError(f"docker transport: container must be 'shared' or 'fresh', not {container!r}")
        check_options("docker transport", optional=("mem_limit_bytes", "cpus", "orphan_timeout", "server_idle_timeout"),
                      counts={"mem_limit_bytes": mem_limit_bytes}, amounts={"cpus": cpus}, commands={"python": python},
                      seconds={"orphan_timeout": orphan_timeout, "server_idle_timeout": server_idle_timeout})
        if image is not None:  # a name docker refuses reached the user as its 400 at the first kernel's start
            from ...containers.image_check import check_image_name

            check_image_name(image, "docker transport: image ")
        try:
            self.client: docker.DockerClient = engine_client(docker_host)
        except TransportUnavailableError as exc:
            raise TransportUnavailableError(f"the docker transport cannot run here: {exc}") from None
        refuse_unsafe_run_files("the docker transport cannot run here")  # as doctor says (an image lock, run files)
        weakref.finalize(self, self.client.close)  # not in close(): the leak probe after it still asks
        self.engine = engine_url(self.client)  # what locators and labels name, whatever DOCKER_HOST is later
        self.api = self.client.api
        self.container_mode: ContainerMode = container
        self.mem_limit_bytes = mem_limit_bytes
        self.cpus = cpus
        self.orphan_timeout = orphan_timeout
        self.python = python
        self.scripts = ScriptPythons(python)  # who runs the helper scripts in each container
        self.run_id = run_id or current_run_id()
        from ...containers.sweep import sweep_once_per_process

        sweep_once_per_process(self.client, self.run_id)  # leftovers of dead runs, never this run's
        self.hosts = KernelHosts(self.client, mode=container, image=image, mem_limit_bytes=mem_limit_bytes,
                                 cpus=cpus, run_id=self.run_id, reuse=reuse)
        self._owners: dict[tuple[str, str], tuple[int, int]] = {}
        self.servers = server_pool(self, server_idle_timeout) if server else None
        self.made_dirs = MadeDirs()  # kernel dirs made in the containers (both paths), for the leak probe
        self.left = LeftBehind()  # what spawned runners said their cells left running, for the leak probe

    # ------------------------------------------------------------------------------ containers
    @property
    def image(self) -> str:
        """The image kernels run in (built on first use when none was given)."""
        return self.hosts.image

    @property
    def container_id(self) -> str | None:
        """The shared container this instance uses now (``None`` before the first launch)."""
        return self.hosts.shared_id

    def container_running(self, container_id: str) -> bool:
        """Whether the container exists and runs (a paused one counts as running)."""
        return self.hosts.running(container_id)

    def shared_container(self) -> str:
        """Join the run's shared container (starting it when there is none or it stopped); its id."""
        return self.hosts.shared()

    # ------------------------------------------------------------------------------ exec helpers
    def _run(self, container_id: str, argv: list[str], *, user: str = "root", probe: bool = False) -> tuple[int | None, bytes, bytes]:
        """Run ``argv`` in the container and wait; ``(exit code, stdout, stderr)``. ``probe``: as a
        probe of the engine (:meth:`~.host.KernelHosts.probe`: a short wait for each answer)."""
        def run(api: Any) -> tuple[int | None, bytes, bytes]:
            exec_id = api.exec_create(container_id, argv, user=user, stdout=True, stderr=True)["Id"]
            out, err = api.exec_start(exec_id, demux=True)
            return api.exec_inspect(exec_id).get("ExitCode"), out or b"", err or b""
        return self.hosts.probe(run) if probe else run(self.api)

    def run_script(self, container_id: str, script: str, *args: str, user: str = "root",
                   probe: bool = False, python: str | None = None) -> tuple[int | None, bytes]:
        """Run a python ``script`` with ``args`` in the container as ``user`` (``""``: the image's user) by
        ``python`` or one there (:mod:`..script_pythons`); ``(exit code, stdout)``; ``probe`` as for :meth:`_run`."""
        return self.scripts.run(container_id, python, lambda interpreter: self._run(  # type: ignore[return-value]
            container_id, [interpreter, "-I", "-c", script, *args], user=user, probe=probe))[:2]

    def open_exec(self, container_id: str, argv: list[str], **options: Any) -> DockerExecStream:
        exec_id = self.api.exec_create(container_id, argv, **{"stdin": True, "stdout": True, "stderr": True, **options})["Id"]
        hijacked = self.api.exec_start(exec_id, socket=True)
        stream = DockerExecStream(hijacked, container_running=lambda: self.container_running(container_id))
        stream.exec_id = exec_id
        return stream

    # ------------------------------------------------------------------------------ launch
    def launch(self, spec: LaunchSpec) -> Launched:
        """Fork the kernel from the container's kernel server, or start its runner with execs."""
        with starting_on(self.engine, spec.kernel_id):  # (an engine gone: a start error naming it)
            cid = container_for_launch(self.hosts, self.engine)  # (one that fails or hangs meanwhile: the same)
            started = self.hosts.started(cid)  # a runner lives no longer than this start of its container
        pool = self.servers if not self.hosts.is_fresh(cid) else None
        fork = None if pool is None else lambda: fork_in_container(self, pool, cid, spec)
        launched = with_fallback(fork, lambda: self._spawn(cid, spec))
        launched.extra["started"] = started
        self.scripts.add(cid, launched.extra["python"])  # (the transport's may not be in the image)
        return launched

    def _spawn(self, cid: str, spec: LaunchSpec) -> Launched:
        self.hosts.refuse_if_closed()  # closed as its server forked it: said so (was the engine's 404 for a removed container)
        refuse_if_paused(self.hosts, cid, spec.kernel_id)  # before the dir: no exec could run there, nor remove it
        if self.hosts.is_fresh(cid):  # its container's cgroup is this kernel's alone (hermes_oom's limit): no other's OOM kill
            spec = LaunchSpec(**{**vars(spec), "config": {**spec.config, "cgroup_own": True}})
        kdir = f"{KERNEL_ROOT}/{spec.kernel_id}"
        runner = f"{kdir}/{runner_zipapp().name}"
        self.made_dirs.add(cid, kdir)
        try:
            self._put_runner(cid, spec.kernel_id)
            pid = self._start_runner(cid, runner, kdir, spec)
            stream = self._relay(cid, runner, kdir, spec.python)
        except BaseException as exc:  # whatever failed (Ctrl-C included), end what was started
            self._end_failed_launch(cid, kdir, spec.kernel_id)
            if isinstance(exc, KernelStartError) or not isinstance(exc, Exception):
                raise
            hint = disk_full_hint(exc) or "Hint: does the image have python3? is the container running?"
            raise KernelStartError(f"could not start a kernel runner in container {cid[:12]}: {exc}\n{hint}") from None
        return Launched(stream=stream, pid=pid, kernel_dir=kdir, label=f"docker {cid[:12]} pid {pid} on {self.engine}",
                        extra={"container": cid, "python": spec.python or self.python, "runner": runner,
                               "engine": self.engine})

    def _end_failed_launch(self, container_id: str, kdir: str, kernel_id: str) -> None:
        end_failed_launch(self, container_id, kdir, kernel_id)  # (also the kernel server path's, kernel_server.py)

    def _put_runner(self, container_id: str, dirname: str) -> None:
        put_runner(self.api, container_id, container_owner(self, container_id), dirname)

    def _start_runner(self, container_id: str, runner: str, kdir: str, spec: LaunchSpec) -> int:
        python = spec.python or self.python
        stream = self.open_exec(container_id, [python, "-B", runner, "serve", "--listen", f"{kdir}/{SOCKET_NAME}"],
                                 environment=launch_env(spec.kernel_id), workdir=spec.cwd or kdir)
        try:
            stream.send(runner_config(spec, kdir, self.orphan_timeout))
            stream.shutdown_write()
            out = stream.read_to_end(READY_TIMEOUT)
        except TimeoutError:
            out = b""
        finally:
            stream.close()
        pid = parse_ready(out)
        refused = _CHDIR_FAILED.search(out)
        if pid is None and refused:  # docker's words: "OCI runtime exec failed: ... chdir to cwd (...) failed: ..."
            raise KernelStartError(f"docker transport: cannot enter the working directory cwd={spec.cwd!r} in "
                                   f"container {container_id[:12]}: {refused.group(1).decode().capitalize()}")
        if pid is None:
            code = self.api.exec_inspect(stream.exec_id).get("ExitCode")
            raise KernelStartError(
                f"the kernel runner in container {container_id[:12]} did not report ready (exit code {code}): "
                f"stdout {out[-300:]!r}; stderr {stream.stderr_text()[-1000:]!r}\n"
                f"Hint: {not_ready_hint(code, self.mem_limit_bytes, f'docker exec {container_id[:12]}', python, stream.stderr_text())}")
        return pid

    def _relay(self, container_id: str, runner: str, kdir: str, python: str | None) -> DockerExecStream:
        return self.open_exec(container_id, [python or self.python, "-B", runner, "relay", f"{kdir}/{SOCKET_NAME}"])

    # ------------------------------------------------------------------------------ lifecycle
    def reattach(self, launched: Launched) -> DockerExecStream:
        """A new relay exec to the same runner.

        :raises TransportLostError: if the container stopped or the runner is gone: final (``permanent``),
            the loss is reported at once; not final when the engine cannot tell, or the container is paused.
        """
        cid = launched.extra["container"]
        try:
            running = self.container_running(cid)
        except TransportLostError:
            raise
        except Exception as exc:  # noqa: BLE001 - an engine that answers errors: cannot tell (tried again)
            raise TransportLostError(f"container {cid[:12]} is not seen: {probes.said(exc)}") from None
        if not running:
            raise TransportLostError(self.hosts.stopped_words(cid), permanent=True)
        if self.hosts.seen_paused(cid):  # the engine refuses every exec there: it was docker's 409 APIError
            raise TransportLostError(f"container {cid[:12]} is paused (`docker pause`: its processes are frozen and no "
                                     f"exec runs there). Hint: `docker unpause {cid[:12]}`, then try again")
        probes.check_reattachable(self, launched)  # its runner seen, its socket there
        return self._relay(cid, launched.extra["runner"], launched.kernel_dir or "", launched.extra.get("python"))

    kill = probes.kill
    alive = probes.alive
    frozen = probes.frozen
    seen_gone = probes.seen_gone
    reap = probes.reap
    was_closed = probes.was_closed  # a start whose runner's channel its close ended says so
    exit_status = staticmethod(forked_exit_status)  # a forked runner's, as its server saw it; a spawned one's is not known

    def cleanup(self, launched: Launched) -> None:
        cid = launched.extra.get("container")
        if not cid:
            return
        if self.hosts.is_fresh(cid):
            self.hosts.done_with(cid)
            return self.made_dirs.removed(launched.kernel_dir or "")  # with its container
        if launched.extra.get("dir_removed"):
            return self.made_dirs.removed(launched.kernel_dir or "")  # one path per kernel for ever, before
        if not launched.extra.get("gone") and not self.kill(launched):
            return  # not seen gone (the engine failed, the container is paused): its dir must not go while it runs
        if forked_cleanup(launched):
            return self.made_dirs.removed(launched.kernel_dir or "")
        try:
            kdir = launched.kernel_dir
            if kdir and self.container_running(cid) and self._run(cid, ["rm", "-rf", kdir])[0] == 0:
                self.made_dirs.removed(kdir)
        except Exception as exc:  # noqa: BLE001 - cleanup never raises
            log.warning("could not remove %s in %s: %s", launched.kernel_dir, cid[:12], exc)

    def close(self) -> None:
        """Close the kernel servers; leave the shared container (the run's last user removes it); remove fresh ones."""
        if self.servers is not None:
            self.servers.close()
        self.hosts.close()

    # ------------------------------------------------------------------------------ diagnostics
    def runner_log(self, launched: Launched, lines: int = LOG_TAIL_LINES) -> str:
        """The runner log's tail, the container's disk when all but full, its OOM kills (:func:`.probes.runner_log`)."""
        return probes.runner_log(self, launched, lines)

    def host_log(self, launched: Launched, lines: int = LOG_TAIL_LINES) -> str:
        """The kernel host container's own output (its init's), last ``lines`` lines."""
        return container_log(self.client, launched.extra.get("container") or "", lines)

    locator = keep.locator_of
    release = keep.release
    attach_kept = keep.attach_kept

    def kernel_processes(self, kernel_id: str, locator: dict[str, Any] | None = None) -> list[str]:
        """Live processes of kernel ``kernel_id`` inside its container (:func:`.probes.kernel_processes`)."""
        if locator and locator.get("docker_host") not in (None, self.engine):
            return keep.processes_elsewhere(type(self), kernel_id, locator)
        return probes.kernel_processes(self, kernel_id, locator)

    def note_leftovers(self, launched: Launched, kernel_id: str, processes: list[tuple[int, int, str]]) -> None:
        """Listed by the host-process scan of :meth:`leak_snapshot` while they live."""
        self.left.add(launched.extra["container"], kernel_id, processes)

    def leak_snapshot(self, host_pid: int) -> dict[str, dict[str, str]]:
        """Containers nobody holds, kernel processes and kernel dirs in them (:mod:`.probes`).

        :raises TransportUnavailableError: if the engine's socket takes no connection (gone mid-run), or it answered an error.
        """
        import docker as docker_sdk

        check_answers(self.engine)
        try:
            return probes.snapshot(self, host_pid)
        except docker_sdk.errors.APIError as exc:
            raise TransportUnavailableError(f"the docker engine at {self.engine} could not list: {probes.said(exc)}") from None

    def leak_cleanup(self, kind: str, identity: str) -> None:
        probes.cleanup(self, kind, identity)

    def signal_pid(self, launched: Launched | None, pid: int, sig: int) -> None:
        """Send ``sig`` to ``pid`` inside the kernel's container.

        :param launched: the kernel's launch; ``None`` means the run's shared container (a
            kernel of another process of this run, e.g. the host harness's).
        :raises ProcessLookupError: if no such process runs there.
        """
        cid = launched.extra["container"] if launched is not None else self.hosts.run_container()
        if cid is None:
            raise ProcessLookupError(f"no process {pid}: this run has no shared docker container")
        code, _ = self.run_script(cid, SIGNAL_SCRIPT, str(pid), str(int(sig)))
        if code != 0:
            raise ProcessLookupError(f"no process {pid} in container {cid[:12]}")

    def files(self, launched: Launched, workdir: str) -> DockerFiles:
        """The kernel's files (:class:`~.files.DockerFiles`); a ``cwd=`` symlink is not followed: archives are read as root."""
        cid = launched.extra["container"]  # (followed, a cell's swap of it for a link to /etc gave the host /etc/shadow)
        return DockerFiles(self, cid, workdir.rstrip("/") or "/", container_owner(self, cid), launched.extra.get("python") or self.python)

    def describe(self) -> str:
        limits = "".join([f", mem {self.mem_limit_bytes} B" if self.mem_limit_bytes else "",
                          f", {self.cpus} cpus" if self.cpus else ""])
        kept = ", kept between runs" if self.hosts.reuse is not None and self.container_mode == "shared" else ""
        return f"docker ({self.hosts.image_name}, {self.container_mode} container{limits}{kept}, engine {self.engine})"


def end_failed_launch(transport: DockerTransport, container_id: str, kdir: str, kernel_id: str) -> None:
    """A launch failed: end every process it may have started (found by the kernel id in
    their environment: the runner's pid may never have been reported), then its dir. In a
    paused container neither can be done (every exec is refused): one warning says so."""
    try:
        state = transport.hosts.state(container_id)
        if state == "paused":
            log.warning("failed launch of kernel %s in %s: the container is paused: what the launch may have "
                        "started there and its dir %s cannot be ended now (a runner a kernel server forked "
                        "ends by its orphan timer after the unpause, and removes its dir)",
                        kernel_id, container_id[:12], kdir)
            return
        if state == "running":
            # as the kernel's user: docker's root cannot read other users' environ here
            code, out = transport.run_script(container_id, KILL_KERNEL_SCRIPT, kernel_id, user="")
            if code != 0 or out.strip() != b"gone":
                log.warning("failed launch of kernel %s in %s: could not end all its processes: %r",
                            kernel_id, container_id[:12], out[-200:])
    except Exception as exc:  # noqa: BLE001 - engine errors: the launch error is what the user needs
        log.warning("failed launch of kernel %s in %s: could not end its processes: %s",
                    kernel_id, container_id[:12], exc)
    transport.cleanup(Launched(stream=keep.NullStream(), kernel_dir=kdir, extra={"container": container_id}))


def container_owner(transport: DockerTransport, container_id: str) -> tuple[int, int]:
    """uid and gid of the container's exec user (the kernel dir is theirs), read once per container.

    An answer the engine lost or cut is asked again (:func:`~..detached.until_complete`).

    :raises KernelStartError: if they cannot be read; the message has the last exit code and output.
    """
    key = (transport.engine, container_id)
    owners = _CONTAINER_OWNERS if is_full_container_id(container_id) else transport._owners
    if key not in owners:
        errs: list[bytes] = []

        def ask() -> tuple[int | None, bytes]:
            code, out, err = transport._run(container_id, ["sh", "-c", f"id -u; id -g; {SCAN_END_SH}"], user="")
            errs.append(err)
            return code, out

        answer, code, out = until_complete(ask)
        ids = (answer or b"").split()
        if answer is None or len(ids) != 2 or not all(i.isdigit() for i in ids):
            raise KernelStartError(
                f"could not read the container user's uid and gid in {container_id[:12]} "
                f"({len(errs)} tries): exit code {code}, stdout {out[:200]!r}, "
                f"stderr {errs[-1].decode(errors='replace')[:200]!r}")
        owners[key] = (int(ids[0]), int(ids[1]))
    return owners[key]


#: uid and gid of each container's exec user, by (engine, full container id), for every transport
#: of this process (:func:`~...containers.engines.is_full_container_id`): the ``id`` exec runs once
#: per container, not once per transport instance (80 execs in one suite run). A name or short id
#: stays with its transport.
_CONTAINER_OWNERS: dict[tuple[str, str], tuple[int, int]] = {}
