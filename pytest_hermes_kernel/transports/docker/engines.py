"""The docker transport over several engines (``--hermes-docker-hosts``): kernels spread by load.

:class:`DockerEngines` holds one :class:`~.transport.DockerTransport` per engine (each with its own
client, shared run container, kernel servers, start-up sweep and leak probe, all on its engine)
and places each new kernel on the engine with the fewest live kernels *of this process* (each
xdist worker counts its own), ties going round the list in turn, each xdist worker starting at
another engine (``gw<N>`` at engine ``N mod count``). Everything else about a kernel
goes to the engine it was placed on (``Launched.extra["engine"]``); its label, its first result's
``kernel.note`` and its kept record's locator name that engine.

The image: the kit's own is built (or found up to date) on the first engine and loaded from
there into each other engine that lacks it (``docker save`` + ``load`` through docker-py: same
image id); a named image is loaded from the first engine that has it, else each engine pulls it
(or says how to get it) as a single engine does.

:func:`docker_transport` is the ``docker`` name's factory: ``docker_hosts`` with more than one
engine gives a :class:`DockerEngines`, one engine (or none: the environment's) a plain
:class:`~.transport.DockerTransport`.
"""

from __future__ import annotations

import inspect
import itertools
import threading
from collections.abc import Sequence
from typing import Any, ClassVar

from ...containers.engines import DEFAULT_ENGINE, copy_image, parse_engine_list
from ...errors import ConfigError, TransportLostError
from ...kernel.contract import ByteStream, Launched, LaunchSpec, Transport
from ...kernel.files import KernelFiles
from .transport import DockerTransport

__all__ = ["DockerEngines", "docker_transport"]

_SLOT = "engine_slot"  # Launched.extra key: this launch's place in its engine's live count


class DockerEngines(Transport):
    """Docker kernels spread over several engines (see module docstring).

    :param docker_hosts: the engines' URLs (``unix:///...``, ``tcp://...``; ``default``: the
        environment's engine); two or more.
    :param options: :class:`~.transport.DockerTransport` options, the same for every engine.
    :raises ConfigError: if an URL is bad, or fewer than two distinct engines are named.
    :raises TransportUnavailableError: if an engine does not answer (the message names it).
    """

    name: ClassVar[str] = "docker"
    reattachable: ClassVar[bool] = True
    keepable: ClassVar[bool] = True

    def __init__(self, docker_hosts: Sequence[str], **options: Any) -> None:
        urls = parse_engine_list(",".join(docker_hosts))
        self.members: list[DockerTransport] = []
        try:
            for url in urls:
                self.members.append(DockerTransport(docker_host=None if url == DEFAULT_ENGINE else url, **options))
        except BaseException:
            self._abandon()
            raise
        engines = [m.engine for m in self.members]
        if len(set(engines)) != len(engines) or len(engines) < 2:
            self._abandon()
            raise ConfigError(f"--hermes-docker-hosts must name two or more distinct engines, not {engines}")
        self.orphan_timeout = options.get("orphan_timeout")
        self._named_image = options.get("image")
        self._live: dict[str, set[int]] = {e: set() for e in engines}
        self._turn = _first_turn(len(self.members))
        self._slots = itertools.count()
        self._lock = threading.Lock()
        self._ready: set[str] = set()
        self._leaked_on: dict[tuple[str, str], DockerTransport] = {}

    def _abandon(self) -> None:
        """A construction failed: close the engines' transports made so far, and their clients."""
        for member in self.members:
            member.close()
            member.client.close()

    # ------------------------------------------------------------------------------ placement
    @property
    def engines(self) -> list[str]:
        """The engines' URLs, in the order given."""
        return [m.engine for m in self.members]

    @property
    def run_id(self) -> str:
        """The run every engine's containers are labelled with."""
        return self.members[0].run_id

    def live_kernels(self) -> dict[str, int]:
        """``{engine: kernels of this process placed there and not cleaned up yet}``."""
        with self._lock:
            return {e: len(s) for e, s in self._live.items()}

    def _place(self) -> tuple[DockerTransport, int]:
        """The engine with the fewest live kernels (ties: the next in turn), and a slot counted there."""
        with self._lock:
            n = len(self.members)
            order = [self.members[(self._turn + i) % n] for i in range(n)]
            member = min(order, key=lambda m: len(self._live[m.engine]))
            self._turn = (self.members.index(member) + 1) % n
            slot = next(self._slots)
            self._live[member.engine].add(slot)
            return member, slot

    def _member(self, engine: object) -> DockerTransport:
        member = next((m for m in self.members if m.engine == engine), None)
        if member is None:
            raise TransportLostError(f"docker engine {engine!r} is not one of this transport's ({self.engines})",
                                     permanent=True)
        return member

    def _of(self, launched: Launched) -> DockerTransport:
        return self._member(launched.extra.get("engine"))

    def _prepare(self, member: DockerTransport) -> None:
        """Make the image usable on ``member``'s engine, once (see module docstring)."""
        with self._lock:
            if member.engine in self._ready:
                return
            tag = self._named_image or self.members[0].image  # the kit's own: built/checked on the first
            source = next((m for m in self.members if m.hosts.has_image(tag)), None)
            if source is not None and source is not member:
                copy_image(tag, source.client, member.client)
            member.hosts.adopt_image(tag)
            self._ready.add(member.engine)

    # ------------------------------------------------------------------------------ kernels
    def launch(self, spec: LaunchSpec) -> Launched:
        """Start the kernel on the least loaded engine (see module docstring)."""
        member, slot = self._place()
        try:
            self._prepare(member)
            launched = member.launch(spec)
        except BaseException:
            with self._lock:
                self._live[member.engine].discard(slot)
            raise
        launched.extra[_SLOT] = slot
        launched.note = "; ".join(n for n in (f"on docker engine {member.engine}", launched.note) if n)
        return launched

    def reattach(self, launched: Launched) -> ByteStream:
        return self._of(launched).reattach(launched)

    def kill(self, launched: Launched) -> bool:
        return self._of(launched).kill(launched)

    def alive(self, launched: Launched) -> bool:
        return self._of(launched).alive(launched)

    def reap(self, launched: Launched, timeout: float) -> bool:
        return self._of(launched).reap(launched, timeout)

    def cleanup(self, launched: Launched) -> None:
        member = self._of(launched)
        member.cleanup(launched)
        with self._lock:
            self._live[member.engine].discard(launched.extra.pop(_SLOT, -1))

    def runner_log(self, launched: Launched, lines: int = 20) -> str:
        return self._of(launched).runner_log(launched, lines)

    def host_log(self, launched: Launched, lines: int = 20) -> str:
        return self._of(launched).host_log(launched, lines)

    def locator(self, launched: Launched) -> dict[str, Any]:
        return self._of(launched).locator(launched)

    def release(self, launched: Launched) -> None:
        self._of(launched).release(launched)

    def attach_kept(self, locator: dict[str, Any]) -> Launched:
        return self._member(locator.get("docker_host")).attach_kept(locator)

    def files(self, launched: Launched, workdir: str) -> KernelFiles:
        return self._of(launched).files(launched, workdir)

    def signal_pid(self, launched: Launched | None, pid: int, sig: int) -> None:
        """Send ``sig`` to ``pid`` in the kernel's container; ``launched=None``: in the run's shared
        container on whichever engine has that process."""
        if launched is not None:
            return self._of(launched).signal_pid(launched, pid, sig)
        for member in self.members:
            try:
                return member.signal_pid(None, pid, sig)
            except ProcessLookupError:
                continue
        raise ProcessLookupError(f"no process {pid} in this run's shared containers on {self.engines}")

    def kernel_processes(self, kernel_id: str, locator: dict[str, Any] | None = None) -> list[str]:
        """The kernel's live processes: on its locator's engine, else scanned on every engine."""
        if locator and locator.get("docker_host"):
            member = next((m for m in self.members if m.engine == locator["docker_host"]), self.members[0])
            return member.kernel_processes(kernel_id, locator)  # an engine not of the list: asked there
        return [p for m in self.members for p in m.kernel_processes(kernel_id, locator)]

    # ------------------------------------------------------------------------------ leaks, report
    def leak_snapshot(self, host_pid: int) -> dict[str, dict[str, str]]:
        """Every engine's snapshot, merged (container ids, and so identities, differ across engines)."""
        merged: dict[str, dict[str, str]] = {}
        for member in self.members:
            for kind, found in member.leak_snapshot(host_pid).items():
                merged.setdefault(kind, {}).update({i: f"{d} on {member.engine}" for i, d in found.items()})
                self._leaked_on.update({(kind, i): member for i in found})
        return merged

    def leak_cleanup(self, kind: str, identity: str) -> None:
        member = self._leaked_on.pop((kind, identity), None)
        for m in [member] if member is not None else self.members:
            m.leak_cleanup(kind, identity)

    def describe(self) -> str:
        return f"docker over {len(self.members)} engines ({'; '.join(m.describe() for m in self.members)})"

    def close(self) -> None:
        """Close every engine's transport (each leaves its shared container; its run's last member removes it)."""
        for member in self.members:
            member.close()


def _first_turn(engines: int) -> int:
    """Where this process's round starts: xdist worker ``gw<N>`` at engine ``N mod engines``, else the first."""
    from ...containers.sharing import worker_id

    number = worker_id().removeprefix("gw")
    return int(number) % engines if number.isdigit() else 0


def docker_transport(*, docker_hosts: Sequence[str] | None = None, **options: Any) -> Transport:
    """The ``docker`` transport: over several engines when ``docker_hosts`` names two or more,
    else on the one it names (``None``: the environment's engine, ``DOCKER_HOST``).

    :raises ConfigError: if an engine URL is bad.
    :raises TransportUnavailableError: if an engine does not answer.
    """
    urls = parse_engine_list(",".join(docker_hosts)) if docker_hosts else (DEFAULT_ENGINE,)
    if len(urls) > 1:
        return DockerEngines(urls, **options)
    options.setdefault("docker_host", None if urls[0] == DEFAULT_ENGINE else urls[0])
    return DockerTransport(**options)


def _signature() -> inspect.Signature:
    """DockerTransport's keyword options and ``docker_hosts``: what marker checks read of the factory."""
    params = [p for p in inspect.signature(DockerTransport).parameters.values() if p.kind == p.KEYWORD_ONLY]
    extra = inspect.Parameter("docker_hosts", inspect.Parameter.KEYWORD_ONLY, default=None,
                              annotation="Sequence[str] | None")
    return inspect.Signature([*params, extra], return_annotation="Transport")


docker_transport.__signature__ = _signature()  # type: ignore[attr-defined]
