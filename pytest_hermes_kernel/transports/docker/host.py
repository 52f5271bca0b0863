"""The kernel host containers of one docker transport: the run's shared one, or fresh ones.

``container="shared"``: one container per test run for each (image, limits, engine), shared by every
transport instance and xdist worker through :class:`~pytest_hermes_kernel.containers.sharing.SharedResource`;
the last user removes it, and a shared container that stopped is replaced on the next launch.
``container="fresh"``: one container per kernel, removed with the kernel.

With a :class:`~pytest_hermes_kernel.containers.reuse.ReusePolicy` (``--hermes-reuse``) the shared
container is claimed from the reuse store when a parked one fits (cleared first: every process
with the kit's kernel marker ended, the kernel root emptied) or started reusable, and the run's
last user parks it instead of removing it (:mod:`pytest_hermes_kernel.containers.reuse`).

A container that holds an unexpired kernel kept for post-mortem (``--hermes-keep-failed``: a
record of :mod:`pytest_hermes_kernel.containers.kept` names it) is neither removed nor parked:
it outlives the run with its kernel, and ``hermes-kernel sweep --kept`` (or, once the kernel's
TTL ran out, the next sweep) removes it.
"""

from __future__ import annotations

import hashlib
import logging
import tempfile
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Literal, TypeVar

from ...containers.engines import check_answers, engine_url, kill_signals
from ...errors import (CLOSED_TRANSPORT_HINT, HermesKernelError, KernelStartError, TransportLostError,
                       TransportUnavailableError)
from ...containers.kept import stays_for_kept_kernel
from ...containers.labels import LABEL_STATE_FILE, LABEL_TMPDIR
from ...containers.reuse import Claimant, ReusePolicy, ReuseSpec, ReuseStore, claim_or_start, park_or_remove
from ...containers.sharing import Resource, SharedResource, worker_id
from ..detached import CLEAR_KERNELS_SCRIPT, DOCKER_KERNEL_ROOT
from ..script_pythons import CLEAR_WITHOUT_PYTHON_SH, python_anywhere

if TYPE_CHECKING:
    import docker

T = TypeVar("T")
ContainerMode = Literal["shared", "fresh"]
ContainerState = Literal["running", "paused", "stopped"]
#: Engine states (``State.Status``) of a container that still shows ``Running`` while the engine
#: removes it (``docker rm -f``: "Removal In Progress", every exec refused) or after it died.
_ON_ITS_WAY_OUT = ("removing", "dead")
#: Seconds a probe of the engine (a container's state; a runner's kill or liveness exec) waits for
#: an answer, not the client's 60 s: an engine that hangs held a 5 s cell for 129 s, its next
#: cell's refusal and its shutdown for 120 s each (two probes of 60 s a step).
PROBE_TIMEOUT_S = 10.0
#: Seconds after a probe went unanswered during which the next probes say "cannot tell" at once.
SILENT_S = 5.0
#: Seconds a container whose runner was seen gone may take to be seen stopped (killed or removed).
STOPS_SOON_S = 2.0

log = logging.getLogger(__name__)


class KernelHosts:
    """Which container a kernel runs in, and their lifetimes (see module docstring).

    :param client: the docker-py client of the transport.
    :param mode: ``"shared"`` or ``"fresh"``.
    :param image: image to run; ``None`` builds/uses the kernel host image on first use.
    :param mem_limit_bytes: container memory limit; ``None``: none.
    :param cpus: CPU quota in cores; ``None``: none.
    :param run_id: the run the shared container belongs to.
    :param reuse: keep the shared container between runs (see module docstring); ``None``: off.
    """

    def __init__(self, client: docker.DockerClient, *, mode: ContainerMode, image: str | None,
                 mem_limit_bytes: int | None, cpus: float | None, run_id: str,
                 reuse: ReusePolicy | None = None) -> None:
        self.client = client
        self.api = client.api
        self.mode: ContainerMode = mode
        self.mem_limit_bytes = mem_limit_bytes
        self.cpus = cpus
        self.run_id = run_id
        self._image = image
        self._lock = threading.Lock()
        self._shared: SharedResource | None = None
        self._shared_id: str | None = None
        self._fresh: set[str] = set()
        self._started: dict[str, str] = {}  # container id -> its last start (State.StartedAt) seen by state()
        self.closed = False  # close() was called: no container is started or joined again
        self.reuse = reuse
        self._store = None if reuse is None else ReuseStore(reuse.directory)
        self.probe_api = _with_timeout(self.api, PROBE_TIMEOUT_S)
        self._silent_until = 0.0  # a probe went unanswered: later ones fail at once until then
        self._silent_why = ""

    @property
    def image(self) -> str:
        """The image kernels run in (built on first use when none was given)."""
        if self._image is None:
            from ...containers.images import ensure_image

            self._image = ensure_image(self.client, progress=log.info)
        return self._image

    def has_image(self, tag: str) -> bool:
        """Whether image ``tag`` is on this engine."""
        import docker as docker_sdk

        try:
            self.client.images.get(tag)
        except docker_sdk.errors.ImageNotFound:
            return False
        return True

    def adopt_image(self, tag: str) -> None:
        """Run ``tag`` when no image was given (it was made usable on this engine from another one)."""
        if self._image is None:
            self._image = tag

    @property
    def image_name(self) -> str:
        """The image's name without building it (for descriptions)."""
        return self._image or "hermes-kernel-host"

    @property
    def shared_id(self) -> str | None:
        """The shared container this instance uses now (``None`` before the first launch)."""
        return self._shared_id

    def running(self, container_id: str) -> bool:
        """Whether the container exists and runs (a paused one counts as running)."""
        return self.state(container_id) != "stopped"

    def stopped_words(self, container_id: str) -> str:
        """Why a runner in a container :meth:`running` calls stopped cannot be reached: ``container stopped``
        (and OOM-killed), or that it was removed, and by what (it said ``container stopped``). Never raises."""
        import docker as docker_sdk

        try:
            state = self.probe(lambda api: api.inspect_container(container_id))["State"]
            removing, oom = state.get("Status") == "removing", bool(state.get("OOMKilled"))
        except docker_sdk.errors.NotFound:
            removing, oom = True, False
        except Exception:  # noqa: BLE001 - cannot tell more
            removing, oom = False, False
        if removing:  # (`docker rm -f` on its way: "Removal In Progress")
            return (f"container {container_id[:12]} was removed (by hand, or by a sweep: a pytest-hermes-kernel "
                    "before 2026-12-02 on this engine takes a newer run's containers for a dead run's; upgrade it)")
        return f"container stopped ({container_id[:12]})" + (_oom_words(self, container_id, state) if oom else "")

    def state(self, container_id: str, since: str | None = None) -> ContainerState:
        """The container's state as the engine tells it: ``running``, ``paused`` (``docker pause``:
        its processes are frozen, not gone, and the engine refuses every exec into it with 409
        Conflict) or ``stopped`` (also: no such container, or one the engine is removing).
        ``since``: the container's start (:meth:`started`) when a runner was launched in it; one
        started again since (``docker restart``, a restart policy) ended that runner with every
        process in it: ``stopped`` for it (its pids start over: the runner's may be another's now).

        :raises docker.errors.APIError: if the engine cannot tell (not: the container is gone).
        :raises TransportLostError: if the engine does not answer (:meth:`probe`).
        """
        import docker as docker_sdk

        try:
            state = self.probe(lambda api: api.inspect_container(container_id))["State"]
        except docker_sdk.errors.NotFound:
            return "stopped"
        self._started[container_id] = started = state.get("StartedAt") or ""
        if not state.get("Running") or state.get("Status") in _ON_ITS_WAY_OUT or (since and since != started):
            return "stopped"
        return "paused" if state.get("Paused") else "running"

    def started(self, container_id: str) -> str:
        """When the container last started (``State.StartedAt``), as :meth:`state` saw it last
        (a launch's :meth:`for_launch` looked a moment ago), else as the engine says now."""
        if container_id not in self._started:
            self.state(container_id)
        return self._started.get(container_id, "")

    def probe(self, call: Callable[[docker.APIClient], T]) -> T:
        """``call(api)`` with an API client whose calls wait :data:`PROBE_TIMEOUT_S` at most; once
        one went unanswered, the probes of the next :data:`SILENT_S` seconds fail at once.

        :raises TransportLostError: if the engine did not answer, now or a moment ago.
        """
        import requests

        if time.monotonic() < self._silent_until:
            raise TransportLostError(f"the docker engine at {engine_url(self.client)} does not answer: "
                                     f"{self._silent_why}")
        try:
            check_answers(engine_url(self.client))  # first: docker-py leaks the socket of each connect that fails
            return call(self.probe_api)
        except TransportUnavailableError as exc:  # no engine at its socket (gone, moved)
            raise TransportLostError(str(exc)) from None
        except requests.exceptions.Timeout as exc:
            self._silent_until, self._silent_why = time.monotonic() + SILENT_S, str(exc)
            raise TransportLostError(f"the docker engine at {engine_url(self.client)} did not answer within "
                                     f"{PROBE_TIMEOUT_S:g} s: {exc}") from None
        except requests.exceptions.ConnectionError as exc:  # its dockerd gone (killed, stopped): requests' words were all
            raise TransportLostError(_no_engine_words(engine_url(self.client), exc)) from None

    def seen_paused(self, container_id: str) -> bool:
        """Whether the engine answers that the container is paused (not: cannot be asked)."""
        try:
            return self.state(container_id) == "paused"
        except Exception:  # noqa: BLE001 - an engine that cannot answer says nothing
            return False

    def for_launch(self) -> str:
        """The container for a new kernel: a fresh one, or the run's shared one.

        :raises KernelStartError: after :meth:`close` (see :meth:`refuse_if_closed`).
        """
        self.refuse_if_closed()
        if self.mode == "fresh":
            cid = self._start()
            with self._lock:
                closed = self.closed
                if not closed:
                    self._fresh.add(cid)
            if closed:  # closed from another thread while it started: close() did not see it
                self.remove(cid)
                self.refuse_if_closed()
            return cid
        return self.shared()

    def shared(self) -> str:
        """Join the run's shared container (starting it when there is none or it stopped); its id.

        :raises KernelStartError: after :meth:`close` (see :meth:`refuse_if_closed`).
        """
        with self._lock:
            self.refuse_if_closed()  # under the lock close() takes: never joined after it left
            if self._shared_id is not None and self.running(self._shared_id):
                return self._shared_id
            resource = self._resource()
            record = resource.acquire(start=lambda: self._start_shared(resource),
                                      usable=lambda r: self.running(r["container_id"]), discard=self._discard)
            self._shared_id = record["container_id"]
            return self._shared_id

    def refuse_if_closed(self) -> None:
        """A closed transport starts and joins no container: a handle that auto-restarted its kernel
        after the transport's close (a cell run on it at interpreter exit, after the plugin closed
        the run's transports) started a new container, and the process then exited a member of it:
        the container and the run's files outlived it.

        :raises KernelStartError: if :meth:`close` was called.
        """
        if self.closed:
            raise KernelStartError("this docker transport was closed: it starts no container or kernel any more\n"
                                   f"{CLOSED_TRANSPORT_HINT}")

    def run_container(self) -> str | None:
        """The run's shared container for these options, joined or not (``None``: none yet)."""
        if self._shared_id is not None:
            return self._shared_id
        record = self._resource().peek()
        return None if record is None else record["container_id"]

    def all_known(self) -> list[str]:
        """The run's shared container (if any) and this instance's fresh ones."""
        return [c for c in (self.run_container(), *self._fresh) if c]

    def is_fresh(self, container_id: str) -> bool:
        return container_id in self._fresh

    def done_with(self, container_id: str) -> None:
        """A kernel in a fresh container ended: remove the container (and forget its start)."""
        with self._lock:
            self._fresh.discard(container_id)
            self._started.pop(container_id, None)  # one per fresh container was kept for the transport's life
        self.remove(container_id)

    def remove(self, container_id: str) -> None:
        """Remove a container of this run, unless it holds a kept kernel (see module docstring)."""
        from ...containers.lifecycle import remove_container

        if stays_for_kept_kernel(container_id):
            return
        try:  # first: docker-py leaks the socket of a connect that fails (a ResourceWarning at a run's end)
            check_answers(engine_url(self.client)) or remove_container(container_id, client=self.client)
        except Exception as exc:  # noqa: BLE001 - removal is best effort; the label sweep is the backstop
            log.warning("%s", not_removed_words(engine_url(self.client), container_id, exc))

    def close(self) -> None:
        """Leave the shared container (the run's last user removes it); remove fresh ones."""
        with self._lock:
            self.closed = True
            fresh, self._fresh = list(self._fresh), set()
            shared, self._shared, self._shared_id = self._shared, None, None
        for cid in fresh:
            self.remove(cid)
        if shared is not None:
            try:
                shared.release(stop=self._stop_shared)
            except Exception as exc:  # noqa: BLE001 - closing is best effort; the label sweep is the backstop
                log.warning("could not release the shared container: %s", exc)

    def _start_shared(self, resource: SharedResource) -> Resource:
        """The run's first user: start the shared container, or (reuse on) claim a parked one."""
        labels = {LABEL_STATE_FILE: resource.state_path}
        if self._store is None or self.reuse is None:
            return {"container_id": self._start(labels)}
        return claim_or_start(self._store, self._reuse_spec(), Claimant(self.run_id, resource.state_path, resource.member),
                              self.reuse, start=lambda more: ({"container_id": self._start({**labels, **more})}, None),
                              ready=self._clear, remove=self.remove)

    def _stop_shared(self, record: Resource) -> None:
        """The run's last user: remove the shared container, or park a reusable one (neither while
        it holds a kept kernel)."""
        if stays_for_kept_kernel(record["container_id"]):
            return
        if self._store is None or self.reuse is None:
            self.remove(record["container_id"])
        else:
            park_or_remove(self._store, record, self.reuse, self.remove)

    def _discard(self, record: Resource) -> None:
        """A recorded shared container that stopped: gone for good (its reuse record too)."""
        if self._store is not None:
            self._store.forget(record["container_id"])
        self.remove(record["container_id"])

    def _reuse_spec(self) -> ReuseSpec:
        from ...containers.lifecycle import SSH_USER

        shape = (("mem_limit_bytes", str(self.mem_limit_bytes)), ("cpus", str(self.cpus)), ("network", "none"),
                 ("user", SSH_USER), ("engine", engine_url(self.client)))
        return ReuseSpec("docker-kernel-host", self.image, str(self.client.images.get(self.image).id), shape)

    def _clear(self, container_id: str) -> bool:
        """A claimed container runs and no kernel of an earlier run is left in it (ended now; the
        kernel root emptied), as the container's user (root lacks ptrace rights on their environ)."""
        if not self.running(container_id):
            return False
        argv = python_anywhere(CLEAR_KERNELS_SCRIPT, [DOCKER_KERNEL_ROOT], CLEAR_WITHOUT_PYTHON_SH)  # (python3 may be missing)
        exec_id = self.api.exec_create(container_id, argv, user="", stderr=False)["Id"]
        out = self.api.exec_start(exec_id)
        if out.strip() != b"gone":
            log.warning("a reused container %s still runs kernel processes (%r): not used", container_id[:12], out[-200:])
        return out.strip() == b"gone"

    def _start(self, labels: dict[str, str] | None = None) -> str:
        from ...containers.lifecycle import start_kernel_host

        labels = {LABEL_TMPDIR: tempfile.gettempdir(), **(labels or {})}  # where a kept kernel's record is

        container = start_kernel_host(image=self.image, run_id=self.run_id, worker_id=worker_id(),
                                      mem_limit_bytes=self.mem_limit_bytes, cpus=self.cpus,
                                      network_disabled=True, labels=labels, client=self.client)
        return str(container.id)

    def _resource(self) -> SharedResource:
        if self._shared is None:
            shape = (self.image, self.mem_limit_bytes, self.cpus, engine_url(self.client))  # one per engine
            key = hashlib.sha256(repr(shape).encode()).hexdigest()[:12]
            self._shared = SharedResource("docker", key, run_id=self.run_id)
        return self._shared


def _oom_words(hosts: KernelHosts, container_id: str, state: dict[str, str]) -> str:
    """What follows "container stopped (ID)" of one the engine says ``State.OOMKilled``: its memory limit
    ran out, unless the engine's events show it killed (``docker kill``, ``stop``, ``rm -f``): ``OOMKilled``
    counts any OOM kill in it since its start (an earlier cell's), and one killed by hand was said out of memory."""
    try:
        killed = hosts.probe(lambda api: kill_signals(api, container_id, state["StartedAt"]))
    except Exception:  # noqa: BLE001 - the engine cannot tell: what its State says
        killed = []
    limit = f"its memory limit (mem_limit_bytes={hosts.mem_limit_bytes})" if hosts.mem_limit_bytes else "the memory"
    return ": " + (f"killed through the engine (signal {', '.join(killed)}: `docker kill`, `stop` or `rm -f`); the "
                   "OOM killer had fired in it before (State.OOMKilled), not what stopped it" if killed else
                   f"the engine says the OOM killer fired in it (State.OOMKilled): {limit} ran out")


def _with_timeout(api: docker.APIClient, timeout: float) -> docker.APIClient:
    """A view of ``api`` whose calls wait ``timeout`` seconds for an answer: its connection pools
    are ``api``'s (no second version ping, no second set of sockets); only the timeout differs."""
    view = object.__new__(type(api))
    view.__dict__.update(api.__dict__)
    view.timeout = timeout
    return view


def not_ready_hint(code: int | None, mem_limit_bytes: int | None, run: str, python: str, stderr: str = "") -> str:
    """The hint of a runner that ended with exit code ``code`` before it said ready: one SIGKILLed
    (137) was not a wrong interpreter, and with a memory limit most likely the OOM killer's; one
    whose own fork was refused (``BlockingIOError``, EAGAIN: the container at its pids limit) neither.

    :param run: the command prefix that runs a program where the runner ran (``docker exec <id>``).
    :param stderr: what the runner wrote on stderr.
    """
    if "BlockingIOError" in stderr:  # it said "is 'python3' the container's python?" (a breaker helper, 2026-12-07)
        return ("the container has run out of processes (its pids limit, `docker run --pids-limit`, or ulimit -u), "
                "by its kernels or other processes: end some of them there, or raise the limit")
    if code == 137:  # 128 + SIGKILL
        return "the runner was killed by SIGKILL (exit code 137) as it started" + (
            "" if mem_limit_bytes is None else f": the container's memory limit (mem_limit_bytes={mem_limit_bytes}) "
            "is the likely cause (the OOM killer): raise it")
    return f"run `{run} {python} -V`; is {python!r} the container's python?"


def container_for_launch(hosts: KernelHosts, engine: str) -> str:
    """The container a new kernel goes in (:meth:`KernelHosts.for_launch`), on engine ``engine``.

    :raises KernelStartError: also when the engine fails or does not answer meanwhile (naming the
        engine: it was a bare ``requests.exceptions.ConnectionError``).
    """
    try:
        return hosts.for_launch()
    except Exception as exc:  # noqa: BLE001 - requests/urllib3 errors are no DockerException
        if isinstance(exc, HermesKernelError) and not isinstance(exc, TransportLostError):
            raise
        raise KernelStartError(f"docker transport: the engine at {engine} failed while the kernel's "
                               f"container was chosen: {type(exc).__name__}: {exc}\n"
                               "Hint: is dockerd running there and answering (`docker info`)?") from None


def refuse_if_paused(hosts: KernelHosts, container_id: str, kernel_id: str) -> None:
    """Refuse a start in a paused container (``docker pause``: the engine refuses every exec into
    it with 409 Conflict, and a kernel server there is frozen), before anything is made there.

    :raises KernelStartError: if the engine says the container is paused (not: it cannot tell).
    """
    if hosts.seen_paused(container_id):
        raise KernelStartError(f"cannot start kernel {kernel_id}: its container {container_id[:12]} is paused "
                               f"(`docker pause`: its processes are frozen and no exec runs there)\n"
                               f"Hint: `docker unpause {container_id[:12]}`, then start it again", kernel_id=kernel_id)


def not_removed_words(url: str, container_id: str, exc: Exception) -> str:
    """What a run's end says of a container it could not remove: the engine, why (an engine gone
    was requests' bare "('Connection aborted.', FileNotFoundError(2, ...))"), and what removes it."""
    import requests

    why = _no_engine_words(url, exc) if isinstance(exc, requests.exceptions.ConnectionError) else str(exc)
    return (f"could not remove container {container_id[:12]} on the docker engine at {url}: {why}; it stays there "
            f"until `docker rm -f {container_id[:12]}`, or the start-up sweep of the next run on that engine, or "
            "`hermes-kernel sweep` (its run is gone by then)")


def _no_engine_words(url: str, exc: Exception) -> str:
    """What a user reads of an engine that refused a probe's connection: the socket's own words
    (``cannot connect to /path: Connection refused``) where it can be asked, else requests'."""
    try:
        check_answers(url)
    except HermesKernelError as gone:
        return str(gone)
    return f"the docker engine at {url} did not answer: {exc}"
