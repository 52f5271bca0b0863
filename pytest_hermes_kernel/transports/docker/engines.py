"""The docker transport over several engines (``--hermes-docker-hosts``): kernels spread by load.

:class:`DockerEngines` holds one :class:`~.transport.DockerTransport` per engine (each with its own
client, shared run container, kernel servers, start-up sweep and leak probe, all on its engine)
and places each new kernel on the engine with the fewest live kernels of this process
(:class:`~..spread.Spread`: ties in turn, xdist worker ``gw<N>`` starting at engine ``N mod
count``). Everything else about a kernel goes to the engine it was placed on; its label
(``docker <container> pid N on <engine>``), its first result's ``kernel.note`` (``on docker
engine <engine>``) and its kept record's locator (``docker_host``) name that engine.

The image: the kit's own is built (or found up to date) on the first engine and loaded from
there into each other engine that lacks it (``docker save`` + ``load`` through docker-py: same
image id); a named image is loaded from the first engine that has it, else each engine pulls it
(or says how to get it) as a single engine does.

:func:`docker_transport` is the ``docker`` name's factory: ``docker_hosts`` with more than one
engine gives a :class:`DockerEngines`, one engine (or none: the environment's) a plain
:class:`~.transport.DockerTransport`.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any, ClassVar

from ...containers.engines import DEFAULT_ENGINE, copy_image, parse_engine_list, refuse_too_old, starting_on
from ...errors import ConfigError
from ...kernel.contract import LaunchSpec, Transport
from ..spread import Spread, factory_signature
from .transport import DockerTransport

__all__ = ["DockerEngines", "docker_transport"]


def _check_distinct(urls: Sequence[str], engines: Sequence[str]) -> None:
    """:raises ConfigError: unless ``urls`` are two or more engines, each named once (``default``
    is the environment's engine, which another URL in the list may name too)."""
    named: dict[str, list[str]] = {}
    for url, engine in zip(urls, engines):
        named.setdefault(engine, []).append(url)
    same = [f"{' and '.join(map(repr, given))} are one engine ({engine})" for engine, given in named.items()
            if len(given) > 1]
    if same or len(named) < 2:
        why = "; ".join(same) if same else f"only {engines[0]} is named"
        raise ConfigError(f"the docker hosts setting (--hermes-docker-hosts, PYTEST_HERMES_DOCKER_HOSTS or ini "
                          f"hermes_docker_hosts) must name two or more distinct engines: {why}")


class DockerEngines(Spread[DockerTransport]):
    """Docker kernels spread over several engines (see module docstring).

    :param docker_hosts: the engines' URLs (``unix:///...``, ``tcp://...``; ``default``: the
        environment's engine); two or more distinct ones.
    :param options: :class:`~.transport.DockerTransport` options, the same for every engine.
    :raises ConfigError: if an URL is bad, or fewer than two distinct engines are named.
    :raises TransportUnavailableError: if an engine does not answer (the message names it).
    """

    name: ClassVar[str] = "docker"
    keepable: ClassVar[bool] = True
    place_word: ClassVar[str] = "engine"

    def __init__(self, docker_hosts: Sequence[str], **options: Any) -> None:
        members: list[DockerTransport] = []
        try:
            urls = parse_engine_list(",".join(docker_hosts))
            for url in urls:
                members.append(DockerTransport(docker_host=None if url == DEFAULT_ENGINE else url, **options))
            _check_distinct(urls, [m.engine for m in members])
        except BaseException:
            for member in members:  # their clients too: nothing else will close them
                member.close()
                member.client.close()
            raise
        self.orphan_timeout = options.get("orphan_timeout")
        self._named_image = options.get("image")
        self._ready: set[str] = set()
        self._image_lock = threading.Lock()
        super().__init__(members)

    @property
    def run_id(self) -> str:
        """The run every engine's containers are labelled with."""
        return self.members[0].run_id

    def place_of(self, member: DockerTransport) -> str:
        return member.engine

    def place_in(self, locator: dict[str, Any]) -> str | None:
        engine = locator.get("docker_host")
        return engine if isinstance(engine, str) else None

    def prepare(self, member: DockerTransport, spec: LaunchSpec) -> None:
        """Make the image usable on ``member``'s engine (copied once; its presence checked at each launch).

        :raises KernelStartError: if an engine asked does not answer (named: one gone mid-run).
        """
        def has_image(m: DockerTransport) -> bool:
            with starting_on(m.engine, spec.kernel_id):
                return m.hosts.has_image(tag)

        with self._image_lock:
            tag = self._named_image or self.members[0].image  # the kit's own: built/checked on the first
            if member.engine in self._ready and has_image(member):
                return  # checked at every launch: an image removed from an engine meanwhile is loaded again
            source = next((m for m in self.members if has_image(m)), None)
            if source is not None and source is not member:
                with starting_on(member.engine, spec.kernel_id):
                    copy_image(tag, source.client, member.client)
            member.hosts.adopt_image(tag)
            self._ready.add(member.engine)

    def kernel_processes(self, kernel_id: str, locator: dict[str, Any] | None = None) -> list[str]:
        """As :meth:`Spread.kernel_processes`; a locator naming an engine not of the list (a host
        harness's kernel on the environment's engine) is asked on that engine."""
        place = self.place_in(locator) if locator else None
        if place is not None and place not in self.places:
            return self.members[0].kernel_processes(kernel_id, locator)
        return super().kernel_processes(kernel_id, locator)

    def describe(self) -> str:
        return f"docker over {len(self.members)} engines ({'; '.join(m.describe() for m in self.members)})"


def docker_transport(*, docker_hosts: Sequence[str] | None = None, **options: Any) -> Transport:
    """The ``docker`` transport: over several engines when ``docker_hosts`` names two or more,
    else on the one it names (``None``: the environment's engine, ``DOCKER_HOST``).

    :raises ConfigError: if an engine URL is bad.
    :raises TransportUnavailableError: if an engine does not answer, or a package of the docker
        extra is older than this package declares.
    """
    refuse_too_old("docker")
    urls = parse_engine_list(",".join(docker_hosts)) if docker_hosts else (DEFAULT_ENGINE,)
    if len(urls) > 1:
        return DockerEngines(urls, **options)
    options.setdefault("docker_host", None if urls[0] == DEFAULT_ENGINE else urls[0])
    return DockerTransport(**options)


docker_transport.__signature__ = factory_signature(  # type: ignore[attr-defined]
    DockerTransport, "docker_hosts", "Sequence[str] | None")
