"""A transport's remote kernel servers (:class:`~.remote_server.RemoteServer`): one per (kernel
host, interpreter), started on first use, replaced when found gone or stale, and the leak probes
run in them instead of by exec.

A server refusing as ``stale`` (a site dir changed since it started, ``kernel/runner/server.py``)
is retired: it relays the kernels it forked until they end and it idles out, and a new server on
the site dirs as they are now forks the next kernels.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable
from typing import Any

from ..errors import KernelServerUnavailable
from .remote_server import SPAWN_TIMEOUT_S, MuxStream, RemoteServer


class ServerPool:
    """A transport's remote kernel servers: one per (kernel host, interpreter), started on first use.

    :param start: ``start(where, python) -> RemoteServer``: one exec that starts a server.
    :param lends_probes: whether :func:`probe_by_server` may run another transport's probes in
        these servers (``where`` names one kernel host for every transport of the process, and
        the servers run as the user those probes' execs would run as: docker's container ids).
    """

    def __init__(self, start: Callable[[str, str], RemoteServer], *, lends_probes: bool = False) -> None:
        self._start = start
        if lends_probes:
            _LENDING_POOLS.add(self)
        self._servers: dict[tuple[str, str], RemoteServer] = {}
        self._retired: list[tuple[str, RemoteServer]] = []  # stale ones, relaying their kernels until they idle out
        self._lock = threading.Lock()
        self._starting: dict[tuple[str, str], threading.Lock] = {}

    def spawn(self, where: str, python: str, config: Callable[[RemoteServer], dict[str, Any]],
              timeout: float | None = None, frozen: Callable[[RemoteServer], bool] | None = None
              ) -> tuple[int, MuxStream, str | None, RemoteServer]:
        """Fork a kernel on ``where`` (a server found gone is replaced once).

        :param config: the runner config for a server (its hello says e.g. the far side's home).
        :param timeout: seconds the caller gives the start (``LaunchSpec.start_timeout``): the
            wait for the server's answer is the shorter of it and :data:`SPAWN_TIMEOUT_S`; ``None``: the latter.
        :param frozen: whether a server that has not answered yet is seen frozen (stopped): the
            wait for it ends then (see :meth:`RemoteServer.request`); kept as the server's
            ``seen_frozen``, for every later request to it.
        :returns: the kernel's pid, its stream, its runner file's path and the server.
        :raises KernelServerUnavailable: if no server could fork it, or none answered in time.
        """
        wait = SPAWN_TIMEOUT_S if timeout is None else min(timeout, SPAWN_TIMEOUT_S)
        def ask(server: RemoteServer) -> tuple[int, MuxStream, str | None, RemoteServer]:
            if frozen is not None:  # its later requests too (a kernel's alive, rmdir: 12 s more each)
                server.seen_frozen = lambda: frozen(server)
            return (*server.spawn(config(server), wait), server)

        try:
            return ask(self._server(where, python))
        except KernelServerUnavailable as exc:
            if exc.sent:
                raise  # a refusal (a new server would refuse too), or it may have forked the kernel
        return ask(self._server(where, python))  # it was gone before it had the request: once more

    def _server(self, where: str, python: str) -> RemoteServer:
        key = (where, python)
        with self._lock:
            starting = self._starting.setdefault(key, threading.Lock())
        with starting:  # one start per key at a time; other kinds of servers start meanwhile
            with self._lock:
                server = self._servers.get(key)
                self._retired[:] = [(w, old) for w, old in self._retired if old.usable]
                if server is not None and server.usable and server.retired:
                    self._retired.append((where, server))
            if server is not None and server.usable and not server.retired:
                return server
            server = self._start(where, python)
            with self._lock:
                self._servers[key] = server
            return server

    def running(self, where: str) -> RemoteServer | None:
        """A usable server already running on ``where`` (none is started for this)."""
        with self._lock:
            return next((s for (w, _), s in self._servers.items() if w == where and s.usable), None)

    def forget(self, where: str) -> None:
        """Drop (and close) the servers on ``where`` (a container that was removed)."""
        with self._lock:
            gone = [self._servers.pop(k) for k in list(self._servers) if k[0] == where]
            gone += [old for w, old in self._retired if w == where]
            self._retired[:] = [(w, old) for w, old in self._retired if w != where]
        for server in gone:
            server.close()

    def close(self) -> None:
        """Close every server (kernels live on their own orphan timers)."""
        with self._lock:
            servers, self._servers = [*self._servers.values(), *(old for _, old in self._retired)], {}
            self._retired.clear()
        for server in servers:
            server.close()


#: Pools whose servers run any transport's probes on their kernel host (``lends_probes``).
_LENDING_POOLS: weakref.WeakSet[ServerPool] = weakref.WeakSet()


def probe_by_server(pool: ServerPool | None, where: str, script: str, args: list[str], *,
                    borrow: bool = False, frozen: Callable[[RemoteServer], bool] | None = None) -> bytes | None:
    """Run a probe ``script`` in a fork of the kernel server already running on ``where`` (no
    exec): its stdout; ``None`` when none runs there or it could not or failed (the caller execs it).

    :param borrow: when ``pool`` has none there, use a server another transport of this process runs
        there, from a pool made with ``lends_probes`` (a spawn-path docker transport scans the run's shared
        container through the server-path transport's server: 289 execs of a fresh python3 in one run before).
    """
    server = None if pool is None else pool.running(where)
    if server is None and borrow:
        server = next((s for p in list(_LENDING_POOLS) if p is not pool and (s := p.running(where)) is not None),
                      None)
    try:
        code, out = (None, None) if server is None else \
            server.probe(script, args, frozen=None if frozen is None else lambda: frozen(server))
    except KernelServerUnavailable:
        return None
    return out if code == 0 else None  # a failed scan's empty stdout must never read as "nothing"
